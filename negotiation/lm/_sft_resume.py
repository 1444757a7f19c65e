"""Exact resume of an interrupted imitation warm start (``train_sft``).

A GPU call has a time limit and the largest size's warm start may not fit one: ``train_sft`` with
a ``resume`` path writes the loop's whole state there at every validation point after step 0
(weights, AdamW moments, the order Generator and the examples left in its pass, the curves so
far), atomically, and a later call with the same path continues from it. The resumed warm start
equals an uninterrupted one (same bytes on the CPU, tested). The file names what it belongs to
(``key``: steps, batch, recipe, example counts); a file of another warm start is refused, never
silently continued. ``write_base`` deletes it once the base is saved.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from negotiation.errors import ConfigError

__all__ = ["SFT_RESUME_FILE", "read_sft_resume", "write_sft_resume"]

SFT_RESUME_FILE = "warm_start_resume.pt"


def write_sft_resume(path: Path, key: dict[str, Any], step: int, model: Any, optimizer: Any, rng: Any,
                     order: list[int], result: Any, seconds: float) -> None:
    """Save the loop's state before ``step`` (its validation done) to ``path``; a kill mid-write
    keeps the previous file."""
    import torch

    tmp = Path(str(path) + ".tmp")
    torch.save({"key": json.dumps(key, sort_keys=True), "step": step, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "rng": rng.bit_generator.state, "order": list(order),
                "result": asdict(result), "seconds": seconds, "torch_rng": torch.get_rng_state()}, tmp)
    os.replace(tmp, path)


def read_sft_resume(path: Path, key: dict[str, Any], model: Any, optimizer: Any, rng: Any,
                    result: Any) -> tuple[int, list[int], float] | None:
    """Restore ``path`` into ``model``, ``optimizer``, ``rng`` and ``result``; return ``(step,
    order, seconds so far)``, or None when there is no file. A file of another warm start (its
    ``key`` differs) is a ``ConfigError`` naming the file and the first differing key."""
    import torch

    if not Path(path).is_file():
        return None
    state = torch.load(path, map_location="cpu", weights_only=False)
    saved = json.loads(state["key"])
    for name in sorted(set(saved) | set(key)):
        if saved.get(name) != key.get(name):
            raise ConfigError(f"{path}:key.{name}: {saved.get(name)!r} in the file, {key.get(name)!r} now; a resume "
                              "continues the same warm start: delete the file to start again")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng.bit_generator.state = state["rng"]
    torch.set_rng_state(state["torch_rng"])
    for name, value in state["result"].items():
        setattr(result, name, [tuple(v) for v in value] if name in ("val_loss", "train_loss") else value)
    return int(state["step"]), [int(i) for i in state["order"]], float(state["seconds"])
