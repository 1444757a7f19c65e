"""CI's per-part timing table (.ci/timing.sh, sourced by .ci/run): every part's seconds and status
are printed at the end, a failing part stops the run at its first failing line and is still listed,
and .ci/run times each of its parts and keeps running the README's test command."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import REPO

HELPER = REPO / ".ci" / "timing.sh"


def ci(body: str, tmp_path) -> subprocess.CompletedProcess[str]:
    script = f"set -euo pipefail\nsource {HELPER}\ntrap ci_timing_table EXIT\n{body}\n"
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "CI_TIMING_FILE": str(tmp_path / "parts.tsv")})


def rows(out: str) -> dict[str, tuple[float, str]]:
    found = re.findall(r"^(.+?)\s+(\d+\.\d)\s+\d+\.\d\s+\d+%\s+(ok|failed \(\d+\))$", out, re.M)
    return {name: (float(seconds), status) for name, seconds, status in found}


def test_the_table_lists_every_part_with_its_seconds_and_a_total(tmp_path):
    done = ci('ci_part "short sleep" sleep 0.3\nci_part "no-op" true', tmp_path)
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert list(table) == ["short sleep", "no-op"] and table["short sleep"][0] >= 0.3
    assert all(status == "ok" for _, status in table.values())
    assert re.search(r"^sum of parts\s+\d+\.\d\s+\d+\.\d$", done.stdout, re.M)
    assert re.search(r"^wall \(background parts overlap\)\s+\d+\.\d\s+\d+\.\d$", done.stdout, re.M)
    assert (tmp_path / "parts.tsv").read_text().splitlines()[1] == "no-op\t0.0\tok"


def test_a_failing_part_stops_the_run_at_its_first_failing_line_and_is_listed(tmp_path):
    body = ('checks() { echo first; false; echo after-the-failure; }\n'
            'ci_part "passes" true\nci_part "checks" checks\nci_part "never runs" true')
    done = ci(body, tmp_path)
    assert done.returncode == 1 and "after-the-failure" not in done.stdout
    assert {name: status for name, (_, status) in rows(done.stdout).items()} == {"passes": "ok", "checks": "failed (1)"}


def test_background_parts_overlap_the_next_ones_and_are_listed_with_their_log(tmp_path):
    body = ('ci_background "slow side" bash -c "sleep 1; echo side-done"\nci_part "main" sleep 1\n'
            'ci_wait\nci_part "after" true')
    done = ci(body, tmp_path)
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert list(table) == ["main", "slow side (background)", "after"] and table["slow side (background)"][0] >= 1
    assert "side-done" in done.stdout.split("ran in the background")[1]
    wall = float(re.search(r"^wall \(background parts overlap\)\s+(\d+\.\d)", done.stdout, re.M)[1])
    assert wall < 1.8  # one second of sleep beside another, not two


def test_a_failing_background_part_fails_the_wait(tmp_path):
    done = ci('ci_background "bad" bash -c "exit 3"\nci_part "good" true\nci_wait\nci_part "never runs" true',
              tmp_path)
    assert done.returncode == 3
    assert {name: status for name, (_, status) in rows(done.stdout).items()} == {
        "good": "ok", "bad (background)": "failed (3)"}


def test_background_parts_not_waited_for_are_listed_when_a_part_fails(tmp_path):
    body = ('ci_background "quick" bash -c "echo quick-done"\nci_background "long" sleep 30\nsleep 0.5\n'
            'ci_part "fails" false\nci_wait')
    done = ci(body, tmp_path)
    assert done.returncode == 1 and "quick-done" in done.stdout
    assert {name: status for name, (_, status) in rows(done.stdout).items()} == {
        "fails": "failed (1)", "quick (background)": "ok", "long (background)": "failed (143)"}


def test_ci_run_times_each_part_and_runs_the_readme_test_command():
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "source .ci/timing.sh" in run and "trap ci_timing_table EXIT" in run
    commands = [line.split("#")[0].strip() for line in run.splitlines()]
    top = [c for c in commands if c and not c.startswith(("set ", "cd ", "source ", "trap ", "export ", "for ", "done",
                                                           "if ", "fi", "local ", "nego ", "}")) and "()" not in c
           and not re.match(r"\w+=", c)]
    assert top and all(c.startswith(("ci_part ", "ci_background ", "ci_wait")) for c in top), top
    assert 'ci_part "make test (fast suite)" make test' in run  # README: `make test  # the tests`
    assert "make test" in (REPO / "README.md").read_text(encoding="utf-8")
