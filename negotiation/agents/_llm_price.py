"""Token prices, for the $ per episode the paper reports ($0.069 for its frontier cells).

Prices come from litellm's bundled price map, read as JSON without importing litellm (the
import takes seconds), or from the spec (``usd_per_mtok_in`` / ``usd_per_mtok_out``, dollars
per million tokens) for models the map does not know. No price means cost ``None``: unknown,
never zero.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_PRICE_FILE = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True)
class Price:
    """Dollars per token, in and out."""

    usd_in: float
    usd_out: float
    source: str
    """``litellm:<key>`` or ``spec``."""

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in * self.usd_in + tokens_out * self.usd_out


@lru_cache(maxsize=1)
def _price_map() -> dict[str, dict]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / _PRICE_FILE
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def lookup_price(model: str) -> Price | None:
    """Price of a litellm model name (``provider/model`` or bare), or ``None``."""
    table = _price_map()
    candidates = [model, model.split("/", 1)[1] if "/" in model else model]
    for key in candidates:
        entry = table.get(key)
        if isinstance(entry, dict) and "input_cost_per_token" in entry and "output_cost_per_token" in entry:
            return Price(float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"]), f"litellm:{key}")
    return None


def price_for(model: str, usd_per_mtok_in: float | None, usd_per_mtok_out: float | None) -> Price | None:
    """The spec's price when it gives one (both directions), else the price map's."""
    if usd_per_mtok_in is not None and usd_per_mtok_out is not None:
        return Price(usd_per_mtok_in / 1e6, usd_per_mtok_out / 1e6, "spec")
    return lookup_price(model)
