"""The hash of the weights a seller spec loads: what, besides its spec, decides its episodes.

``select`` writes it into ``select/<arm>/seller.json`` (``weights_sha256``) and the results
store's fingerprint carries it (``seller_weights_sha256``), so a checkpoint retrained at the same
path is another seller, while a run by hand with the arm's spec (``nego evaluate``) hashes the
same folder to the same value and resumes the arm's episodes instead of buying them again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

HASH_CHUNK = 1 << 20
"""Bytes read at a time when hashing weights (a 31B checkpoint never sits in memory whole)."""


def is_optimizer_state(relative: Path) -> bool:
    """Optimizer state (``optimizer/``, ``optim*.pt``, ...): it does not change what a seller
    says, so a weights hash leaves it out."""
    return any(part.lower().startswith("optim") for part in relative.parts)


def folder_sha256(folder: Path) -> str:
    """Hash of the weights in a checkpoint folder: the name and bytes of every file in sorted
    order, read in ``HASH_CHUNK`` pieces, optimizer state excluded (``is_optimizer_state``)."""
    digest, folder = hashlib.sha256(), Path(folder)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if is_optimizer_state(relative):
            continue
        digest.update(str(relative).encode() + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(HASH_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def seller_weights_sha256(seller: str, root: Path | None = None) -> str | None:
    """``folder_sha256`` of the checkpoint ``seller`` names (relative to the repository ``root``,
    as the pipeline's specs are), or None for a seller kind without local weights."""
    from negotiation.agents import agent_kind, parse_spec

    if not agent_kind(seller).local_weights:  # (``AgentKind.local_weights``: litellm, scripted have none)
        return None
    spec = parse_spec(seller)
    target = Path(spec.target)
    if not target.is_absolute():
        from negotiation._root import find_root

        target = (root or find_root()) / target
    return folder_sha256(target)
