"""Every script in benchmarks/ has exactly one small-mode test in the slow suite (issue 30): a
benchmark nobody runs breaks unnoticed (benchmarks/analysis.py once stopped with a traceback)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.benchmarks.small import BENCHMARKS

HERE = Path(__file__).resolve().parent
def scripts() -> list[Path]:
    return sorted(p for p in BENCHMARKS.iterdir() if p.suffix in (".py", ".sh") and not p.name.startswith("_"))


def slow_tests(test_file: Path) -> list[str]:
    """Names of the test functions in ``test_file`` marked ``@pytest.mark.slow``."""
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            and any(ast.unparse(d) == "pytest.mark.slow" for d in node.decorator_list)]


def test_every_benchmark_script_has_one_slow_small_mode_test():
    missing, wrong = [], []
    for script in scripts():
        test_file = HERE / f"test_{script.stem}_benchmark.py"
        if not test_file.is_file():
            missing.append(f"{script.name}: no {test_file.relative_to(HERE.parents[1])}")
            continue
        text = test_file.read_text(encoding="utf-8")
        names = slow_tests(test_file)
        if len(names) != 1 or f'"{script.name}"' not in text or "run_small(" not in text:
            wrong.append(f"{test_file.name}: {len(names)} slow tests; it must hold exactly one, calling "
                         f'run_small("{script.name}", ...)')
    assert not missing and not wrong, "\n".join(missing + wrong)


def test_the_guard_sees_the_scripts():
    assert {"analysis.py", "scaleout.py", "pipeline.sh"} <= {p.name for p in scripts()}
