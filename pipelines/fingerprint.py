"""DVC stage ``code/dvc.yaml:<kind>``: the fingerprint of the code one stage kind runs.

Every stage of a kind runs the same script, so its code deps (the script's import closure,
``negotiation.pipeline._codedeps``) are listed once, on this stage, and each stage of the kind
depends on the one file it writes: a no-op ``dvc repro`` then checks each code file once per kind
instead of once per stage. The file is ``sha256sum`` lines, one per file in path order (a folder
given is every file under it), so it changes exactly when one of those files does, and
``sha256sum -c`` or a diff of two of them names the file.

Standard library only: it runs before anything else and imports nothing it fingerprints.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

SKIPPED_DIRS = frozenset({"__pycache__"})
SKIPPED_SUFFIXES = (".pyc",)
"""What the repository's ``.dvcignore`` leaves out of a code folder: bytecode, rewritten by every
test run, must no more change the fingerprint than it reruns a stage."""


def files_under(path: Path) -> list[Path]:
    """``path`` itself if it is a file, else every file under it but bytecode, in path order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder")
    found = []
    for folder, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        found += [Path(folder) / n for n in names if not n.endswith(SKIPPED_SUFFIXES)]
    return sorted(found, key=lambda p: p.as_posix())


def fingerprint(paths: list[str]) -> str:
    """The ``sha256sum`` lines of every file the paths name, each once, in path order."""
    files = sorted({f for p in paths for f in files_under(Path(p))}, key=lambda p: p.as_posix())
    return "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.as_posix()}\n" for f in files)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path, help="the fingerprint file to write")
    p.add_argument("paths", nargs="+", help="the code files and folders (repository-relative)")
    args = p.parse_args()
    try:
        text = fingerprint(args.paths)
    except FileNotFoundError as missing:
        p.error(str(missing))  # `error: <path>: ...`, exit 2, as every stage script
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(args.out)  # a killed run leaves no half-written fingerprint for DVC to record


if __name__ == "__main__":
    main()
