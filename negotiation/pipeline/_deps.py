"""The code a DVC stage runs, derived from its entry script's import closure.

A stage's output depends on every repository module its process executes. Listing them by hand
drifts (the analysis stages once omitted ``negotiation/env``, so editing the utility function did
not rerun them); this derives them statically with ``ast`` over the repository's own files:

- a module-level import runs when its module runs, so it is followed (its parent packages'
  ``__init__`` too); standard-library and site-packages imports are left out;
- a name is followed to where it is defined: ``from pkg import name`` to ``pkg``'s re-export or
  submodule, ``mod.name`` through an imported module, and a package's lazy ``__getattr__`` export
  to the submodule that defines ``name`` (to every submodule when none does);
- a function's or method's body (and its imports inside, the lazy ones) counts only once the
  function or its class is used by code that runs: module-level code, or a body already counted;
- a string constant naming a repository module (``"negotiation.agents._llm_hf:make"``, a lazy
  table's ``"negotiation.env._tables"``) counts as an import of it where the code holding it runs,
  and a module name built at run time (``f"negotiation.analysis.{name}"``, ``"negotiation.x." + y``)
  as an import of every module of that package;
- ``if TYPE_CHECKING:`` blocks never run and are skipped.

Anything it cannot resolve is over-approximated (a whole package), never dropped: a dep list
that is too long costs a rerun, one too short leaves stale results. ``compress`` lists a
subpackage whole once a stage runs ``FOLDER_SHARE`` of its files (fewer ``dvc.lock`` entries).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "negotiation"
_MODULE_STRING = re.compile(rf"^{PACKAGE}(\.\w+)+(:\w+)?$")

Ref = tuple[str, str | None]
"""``(module, None)``: the module runs; ``(module, name)``: ``name`` of that module is used (from
outside: a re-export, submodule or lazy ``__getattr__`` export); ``(module, LOCAL + name)``: the
module's own code uses its top-level ``name`` (never a submodule nor ``__getattr__``: a module's
``__getattr__`` answers attribute access from outside only); ``(dotted, "")``: a dotted path, the
module it names if it is one, else a name of its parent."""

LOCAL = "="
ALL = "*"
"""``(package, ALL)``: every module of the package runs (a module name built at run time)."""
_PACKAGE_PREFIX = re.compile(rf"^{PACKAGE}(\.\w+)*\.$")


@dataclass
class _Module:
    """One parsed repository module: what runs on import and what each top-level name pulls in."""

    name: str
    path: Path
    is_package: bool
    on_import: set[Ref] = field(default_factory=set)
    names: dict[str, set[Ref]] = field(default_factory=dict)
    lazy_getattr: bool = False


def _module_file(name: str, root: Path) -> Path | None:
    base = root.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _absolute(node: ast.ImportFrom, module: _Module) -> str:
    if not node.level:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _is_type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith("TYPE_CHECKING")


class _Refs(ast.NodeVisitor):
    """The refs a piece of code makes, given the names its module (and the code itself) imports."""

    def __init__(self, module: _Module, aliases: dict[str, str]):
        self.module, self.aliases, self.refs = module, dict(aliases), set[Ref]()

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node):
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.refs.add((alias.name, None))
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = _absolute(node, self.module)
        self.refs.add((source, None))
        for alias in node.names:
            self.refs.add((source, None if alias.name == "*" else alias.name))
            self.aliases[alias.asname or alias.name] = f"{source}.{alias.name}"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases:
            self.refs.add(_split(self.aliases[node.id]))
        else:
            self.refs.add((self.module.name, LOCAL + node.id))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain, base = [node.attr], node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id in self.aliases:
            self.refs.add(_split(".".join([self.aliases[base.id], *reversed(chain)])))
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        head = node.values[0] if node.values else None
        if isinstance(head, ast.Constant) and isinstance(head.value, str) and _PACKAGE_PREFIX.match(head.value):
            self.refs.add((head.value[:-1], ALL))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        head = node.left
        while isinstance(head, ast.BinOp):
            head = head.left
        if isinstance(node.op, ast.Add) and isinstance(head, ast.Constant) and isinstance(head.value, str) \
                and _PACKAGE_PREFIX.match(head.value):
            self.refs.add((head.value[:-1], ALL))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _MODULE_STRING.match(node.value):
            target, _, name = node.value.partition(":")
            self.refs.add((target, ""))  # "negotiation.a.b" may be module a.b or name b of module a
            if name:
                self.refs.add((target, name))


def _split(dotted: str) -> Ref:
    """``a.b.c`` as a ref the resolver narrows: module ``a.b.c`` if it is one, else name ``c`` of ``a.b``."""
    return (dotted, "") if "." in dotted else (dotted, None)


def _parse(name: str, path: Path) -> _Module:
    module = _Module(name, path, path.name == "__init__.py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    aliases = _Refs(module, {}).aliases
    top = _Refs(module, aliases)
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            top.visit(node)
    aliases.update(top.aliases)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = _Refs(module, aliases)
            for child in node.body + [node.args]:
                body.visit(child)
            module.names[node.name] = body.refs
            header = _Refs(module, aliases)  # decorators and defaults run at import
            for child in node.decorator_list + node.args.defaults + node.args.kw_defaults:
                if child is not None:
                    header.visit(child)
            module.on_import |= header.refs
            module.lazy_getattr |= node.name == "__getattr__"
        elif isinstance(node, ast.ClassDef):
            methods, header = _Refs(module, aliases), _Refs(module, aliases)
            for child in node.body:
                (methods if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else header).visit(child)
            for child in node.bases + node.keywords + node.decorator_list:
                header.visit(child)
            module.names[node.name] = methods.refs
            module.on_import |= header.refs
        elif not _is_type_checking(node):
            top.visit(node)
            for target in ast.walk(node) if isinstance(node, ast.Assign | ast.AnnAssign) else ():
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    module.names.setdefault(target.id, set())
    module.on_import |= top.refs
    for alias, dotted in top.aliases.items():
        module.names.setdefault(alias, set()).add(_split(dotted))
    return module


class ImportClosure:
    """The repository files a set of entry scripts executes, over one repository checkout."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._modules: dict[str, _Module | None] = {}

    def _get(self, name: str) -> _Module | None:
        if name not in self._modules:
            path = _module_file(name, self.root) if name.split(".")[0] == PACKAGE else None
            self._modules[name] = _parse(name, path) if path else None
        return self._modules[name]

    def _submodules(self, package: _Module) -> list[str]:
        folder = package.path.parent
        return sorted(f"{package.name}.{p.stem if p.suffix else p.name}" for p in folder.iterdir()
                      if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file())

    def _resolve(self, ref: Ref) -> list[Ref]:
        """What using ``ref`` makes run or used next (``[]`` for code outside the repository)."""
        target, name = ref
        if name == "":  # a dotted path: the module itself, else a name of its parent
            if self._get(target):
                return [(target, None)]
            parent, _, last = target.rpartition(".")
            return [(parent, ""), (parent, last)] if parent else []
        module = self._get(target)
        if module is None:
            return []
        if name is None:
            parents = [(target.rsplit(".", depth)[0], None) for depth in range(1, target.count(".") + 1)]
            return parents + list(module.on_import)
        if name == ALL:
            return [(sub, None) for sub in self._submodules(module)] if module.is_package else [(target, None)]
        if name.startswith(LOCAL):
            return list(module.names.get(name[len(LOCAL):], ()))
        if name in module.names:
            return list(module.names[name])
        if module.is_package and self._get(f"{target}.{name}"):
            return [(f"{target}.{name}", None)]
        if module.lazy_getattr and module.is_package:  # a lazy export: the submodules defining it, else all
            subs = self._submodules(module)
            owners = [sub for sub in subs if name in getattr(self._get(sub), "names", {})]
            return [ref for sub in owners for ref in ((sub, None), (sub, name))] or [(sub, None) for sub in subs]
        return []

    def files(self, entry: Path) -> set[Path]:
        """Every repository file that running ``entry`` (a stage script) executes, ``entry`` included."""
        entry = Path(entry).resolve()
        script = _parse("__main__", entry)
        self._modules["__main__"] = script
        seen: set[Ref] = set()
        todo: list[Ref] = [("__main__", None)]
        while todo:
            ref = todo.pop()
            if ref not in seen:
                seen.add(ref)
                todo.extend(self._resolve(ref))
        del self._modules["__main__"]
        ran = {target for target, name in seen if name is None and target != "__main__"}
        return {entry} | {m.path for m in map(self._get, ran) if m is not None}


FOLDER_SHARE = 0.8
"""A subpackage folder is listed whole once a stage runs this share of its ``.py`` files.

Every listed dep costs DVC work on every ``dvc repro``: it is hashed for each stage's status, and
``dvc.lock`` (four lines a dep, parsed and rewritten whole after every stage) grows with it, so a
clean run's lock rewrites grow quadratically with the entries. Listing the folder instead of
nearly all its files is a safe over-approximation: editing one of the few files the stage does not
run reruns it anyway. The top package is never listed whole (an edit anywhere would rerun every
stage)."""


def compress(files: set[Path], root: Path, *, share: float = FOLDER_SHARE) -> list[str]:
    """``files`` as repository-relative DVC deps: a subpackage folder of which at least ``share``
    of the ``.py`` files are listed becomes the folder (the highest such), the rest stay files."""
    root = Path(root).resolve()
    files = {Path(f).resolve() for f in files}
    sources: dict[Path, set[Path]] = {}
    chosen: set[Path] = set()
    for path in sorted(files):
        keep = path
        for folder in path.parents:
            if folder in (root, root / PACKAGE) or root not in folder.parents:
                break
            if folder not in sources:
                sources[folder] = {p for p in folder.rglob("*.py") if "__pycache__" not in p.parts}
            if not (folder / "__init__.py").is_file() or len(sources[folder] & files) < share * len(sources[folder]):
                break
            keep = folder
        chosen.add(keep)
    return sorted(str(p.relative_to(root)) for p in chosen)
