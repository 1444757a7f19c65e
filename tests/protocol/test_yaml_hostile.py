"""Malformed protocol and registry YAML: one ``file:key: reason`` line, quickly, whatever its shape.

Regression tests for the adversarial review: int, date or unhashable keys crashed
``verify``/``audit`` with a traceback; a duplicate key or a tag printed 86 "changed since
freeze" lines about unrelated keys and never the real problem; a 1 KB file of nested aliases
took 35 s.
"""

from __future__ import annotations

import time

import pytest

from negotiation.errors import ConfigError
from negotiation.study import freeze, load_study, lock_problems

BOMB = "bomb: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"bomb{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(9))}]\n" for i in range(1, 9))

SHAPES = {
    "duplicate key": ("study: demo\n", "study: demo\nstudy: demo\n", "duplicate key 'study'"),
    "int key": ("study: demo\n", "study: demo\n1: x\n", "key '1' is not a string"),
    "date key": ("study: demo\n", "study: demo\n2024-01-01: x\n", "key '2024-01-01' is not a string"),
    "list key": ("study: demo\n", "study: demo\n? [a, b]\n: x\n", "is not a string"),
    "tag": ("study: demo\n", "study: !!python/object/apply:os.system [echo]\n", "tag"),
    "custom tag": ("study: demo\n", "study: !secret demo\n", "tag"),
    "alias bomb": ("study: demo\n", "study: demo\n" + BOMB, "alias"),
    "deep nesting": ("study: demo\n", "study: demo\ndeep: " + "[" * 5000 + "]" * 5000 + "\n", "nest"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_malformed_frozen_file_is_one_line_naming_the_problem(root, edit, shape):
    old, new, reason = SHAPES[shape]
    freeze("demo", root)
    edit(root / "protocol/demo/protocol.yaml", old, new)
    start = time.perf_counter()
    problems = lock_problems("demo", root)
    assert time.perf_counter() - start < 5  # the alias bomb took 35 s; now parsing stops at the first alias
    assert len(problems) == 1, problems
    assert problems[0].startswith("protocol/demo/protocol.yaml:") and reason in problems[0], problems[0]
    with pytest.raises(ConfigError) as info:
        load_study("demo", root)
    assert len(str(info.value).splitlines()) == 1 and reason in str(info.value)


def test_a_malformed_registry_file_is_one_line(root):
    folder = root / "registry/demo/deviations"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "0099-bad.yaml").write_text("id: 99\nid: 100\n", encoding="utf-8")
    from negotiation.registry import run_audit

    report = run_audit("demo", root=root)
    evidence = [f.evidence for f in report.findings if "0099-bad.yaml" in f.evidence]
    assert evidence and "duplicate key 'id'" in evidence[0]
