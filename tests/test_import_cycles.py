"""Layers import downward only: no import cycle anywhere in ``negotiation``.

Imports are read with ``ast`` (module level and inside functions alike: a deferred import is
still a dependency), resolved to modules of the package, and checked twice: between modules
and between packages (``negotiation.registry`` -> ``negotiation.analysis`` and back is a cycle
even when no single module pair is). Imports under ``if TYPE_CHECKING:`` are types only and
are left out. ``importlib.import_module("negotiation.x")`` counts as an import of its module; with
an f-string (``f"negotiation.x.{name}"``) as an import of the module its literal prefix names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import negotiation

PACKAGE_DIR = Path(negotiation.__file__).parent
ROOT = "negotiation"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    return skipped


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _string_import(node: ast.AST) -> str | None:
    """The module an ``importlib.import_module(...)`` (or ``import_module``, ``__import__``) call
    names: its string, or an f-string's literal prefix up to its last dot; ``None`` otherwise."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in ("import_module", "__import__"):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rpartition(".")[0] or None
    return None


def import_graph() -> dict[str, set[str]]:
    """Module -> modules of ``negotiation`` it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
                # ``from pkg import sub`` imports the submodule; ``from pkg import name``, the package.
                targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                            for alias in node.names}
            elif (named := _string_import(node)) is not None:
                targets.add(named)
        graph[name] = {t for t in (_resolve(t, modules) for t in targets if t.startswith(ROOT)) if t and t != name}
    return graph


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Top-level subpackage -> subpackages it imports (``negotiation.x``; a plain module is its own)."""
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        out.setdefault(_package_of(module), set()).update(
            _package_of(t) for t in targets if _package_of(t) != _package_of(module))
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_string_imports_are_edges():
    source = ("import importlib\n"
              "def f(name):\n"
              "    importlib.import_module('negotiation.b')\n"
              "    return importlib.import_module(f'negotiation.c.{name}')\n")
    calls = [_string_import(node) for node in ast.walk(ast.parse(source))]
    assert [c for c in calls if c] == ["negotiation.b", "negotiation.c"]


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


def test_no_package_imports_itself_back():
    assert cycles(package_graph(import_graph())) == []


def _imported_packages(package: str) -> set[str]:
    """Top-level subpackages that any module of ``package`` names in an import: module level,
    inside functions, and under ``if TYPE_CHECKING:`` alike."""
    modules = _modules()
    found: set[str] = set()
    for name, path in modules.items():
        if _package_of(name) != package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {_package_of(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {_package_of(node.module)} | {_package_of(f"{node.module}.{a.name}") for a in node.names}
    return found


def test_the_analysis_does_not_import_the_registry():
    """The registry keeps deviations, sign-offs and the audit; the analysis gets what it reads from
    there as arguments (``RegistryInputs``, built by ``negotiation.pipeline.registry_inputs``)."""
    assert "negotiation.registry" not in _imported_packages("negotiation.analysis")
    # It sees imports inside functions: the hf: seller imports negotiation.lm only when it loads a model.
    assert "negotiation.lm" in _imported_packages("negotiation.agents")


def private_imports_across_packages() -> list[str]:
    """``module: imported`` for every import (module level, in functions, under TYPE_CHECKING) of
    another package's private module (``negotiation.agents._llm`` from ``negotiation.evaluation``):
    a package's ``__init__`` is its public API, and only its own modules see behind it."""
    found = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                private = any(part.startswith("_") for part in parts[2:])
                if parts[0] == ROOT and private and _package_of(target) != _package_of(name):
                    found.append(f"{name}: {target}")
    return sorted(found)


def test_packages_import_each_other_through_their_public_api():
    assert private_imports_across_packages() == []
