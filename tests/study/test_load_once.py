"""One ``Study`` per process: each stage script and ``nego`` command calls ``load_study`` once and
passes the ``Study`` down (issue 29), and no module outside ``negotiation.study`` (and the protocol
loaders it uses) reads ``protocol/<study>/`` or ``registry/<study>/`` files.

The counter (``loads``, tests/study/conftest.py) wraps every binding of ``load_study``. Stages run
in-process through their own scripts' ``main()`` (``stage_main``), on the demo study's reference
arms and synthetic tables.
"""

from __future__ import annotations

import ast
from pathlib import Path

import negotiation.study

REPO = Path(__file__).resolve().parents[2]
ARM = "ref_conceder"  # a scripted reference arm: selected, gated and evaluated without training


def test_the_arm_stages_load_the_study_once_each(stage_env, stage, loads):
    results = str(stage_env)
    for script, args in (("scenarios", ["--out", f"{results}/scenarios"]),
                         ("select_arm", ["--arm", ARM, "--results", results]),
                         ("pilot", ["--arm", ARM, "--results", results]),
                         ("evaluate", ["--arm", ARM, "--results", results, "--metrics", f"{results}/m.json"])):
        before = len(loads)
        stage(script, "--study", "demo", *args)
        assert (script, len(loads) - before) == (script, 1), loads[before:]
    assert (stage_env / "evaluate" / ARM / "episodes.parquet").is_file()


def test_the_study_stages_load_the_study_once_each(stage_env, stage, monkeypatch, loads):
    from negotiation.analysis import write_synthetic_results
    import negotiation.pipeline._analysis as analysis_stage

    study = negotiation.study.load_study("demo")
    results = write_synthetic_results(study.protocol, list(study.arms), stage_env, seed=3).dir
    bootstrap = analysis_stage.bootstrap_settings
    monkeypatch.setattr(analysis_stage, "bootstrap_settings",  # 100 resamples: the count, not the interval
                        lambda protocol, **kw: bootstrap(protocol, **{**kw, "resamples": 100}))
    for script, args in (("validate", ["--results", str(results)]),
                         ("analyze", ["--results", str(results), "--out", f"{results}/analyze", "--seed", "0",
                                      "--metrics", f"{results}/summary.json"]),
                         ("audit", ["--results", str(results), "--out", f"{results}/audit.json"])):
        before = len(loads)
        try:
            stage(script, "--study", "demo", *args)
        except SystemExit:  # the audit of synthetic tables fails (no selection records); loaded once all the same
            assert script == "audit"
        assert (script, len(loads) - before) == (script, 1), loads[before:]


def test_commands_load_the_study_once_each(tmp_path, loads):
    from negotiation.analysis import write_synthetic_results
    from tests.cli.cli_runner import nego

    study = negotiation.study.load_study("demo")
    results = write_synthetic_results(study.protocol, list(study.arms), tmp_path / "results", seed=3).dir
    for args in (("status", "demo"), ("audit", "demo"), ("validate", "--study", "demo", "--results", str(results)),
                 ("protocol", "verify", "demo"),
                 ("play", "--seller", "scripted:boulware", "--buyer", "scripted:titfortat", "--domain", "used_car",
                  "--seed", "5000053", "--study", "demo")):
        before = len(loads)
        result = nego(*args)
        assert result.exit_code in (0, 1), (args, result.stdout, result.stderr)
        assert (args, len(loads) - before) == (args, 1), loads[before:]


def test_a_given_study_is_never_loaded_again(loads):
    """Library functions take a ``Study``; given one, they read nothing of it again."""
    from negotiation.pipeline import arm_reads, arm_rows, registry_inputs, study_state

    study = negotiation.study.load_study("demo")
    study.lock_hash, arm_rows(study), arm_reads(study), study_state(study)
    registry_inputs(study)
    negotiation.study.protocol_hash(study)
    assert len(loads) == 1


def test_evaluate_arm_serves_each_arm_as_the_stage_does():
    """``evaluate_arm`` and the evaluate stage share ``arm_settings``: the effective protocol
    (the paper's 31B arms on four accelerators, deviation 17), not the frozen one."""
    from negotiation.evaluation import arm_settings

    study = negotiation.study.load_study("paper")
    arm = next(name for name, a in study.arms.items() if a.size == "31b")
    frozen = study.protocol.sizes["31b"].eval_accelerators
    serve = arm_settings(study, arm, "vllm:/models/x?size=31b")["serve"]
    assert serve.tensor_parallel_size == 4 != frozen


def test_turn_cap_is_the_protocols():
    study = negotiation.study.load_study("demo")
    assert study.turn_cap == study.protocol.environment.turn_cap == 2 * study.protocol.environment.max_rounds


# --- no module outside negotiation.study reads protocol/<study>/ or registry/<study>/ ---------

LOADERS = {"load_registry", "load_deviation_log", "load_added_arms", "load_continuations", "load_guard_thresholds",
           "load_token_prices", "load_learning", "load_environment", "registry_dir", "study_dir"}
"""Functions that read (or locate, for a read) a study's protocol or registry files."""
ALLOWED = {
    "negotiation/study": "the study's loaders", "negotiation/protocol": "the protocol's loaders",
    "negotiation/registry/_audit.py": "the registry alone when the study does not load (its findings still count)",
    "negotiation/registry/_checks_declared.py": "names the lock file in the lock finding (no read)",
    "negotiation/cli/_config.py": "light commands (scenario, score, domain export) read the environment section alone",
}
SCANNED = ("negotiation", "pipelines", "scripts", "benchmarks")


def _allowed(rel: str) -> bool:
    return any(rel == key or rel.startswith(key + "/") for key in ALLOWED)


def _reads(tree: ast.AST) -> list[str]:
    """Calls of a loader, and paths built with a ``"protocol"``/``"registry"`` segment (``root /
    "registry"``; ``protocol/domains`` is the environment's data, read by ``negotiation.env``)."""
    found = []
    domains = {id(node.left) for node in ast.walk(tree) if isinstance(node, ast.BinOp)
               and isinstance(node.right, ast.Constant) and node.right.value == "domains"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in LOADERS:
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right = node.right
            if isinstance(right, ast.Constant) and right.value in ("registry", "protocol") and id(node) not in domains:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_the_study_reads_study_files():
    offenders = {}
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if _allowed(rel):
                continue
            reads = _reads(ast.parse(path.read_text(encoding="utf-8")))
            if reads:
                offenders[rel] = reads
    assert offenders == {}, "read the study through load_study (one Study per process):\n" + "\n".join(
        f"{rel}: {reads}" for rel, reads in offenders.items())


def test_a_served_seller_of_the_callers_study_reads_its_protocol(loads):
    """``nego play``/``evaluate`` with a ``vllm:...?size=`` seller serve it from the command's
    protocol, not from the spec's study loaded again."""
    from negotiation.agents import RetryPolicy
    from negotiation.evaluation import agent_factory

    study = negotiation.study.load_study("paper")
    seller = agent_factory(study.protocol, retry=RetryPolicy(), max_concurrency=1)(
        "vllm:/models/x?size=31b&executable=/bin/true", "seller")
    assert len(loads) == 1 and seller is not None
