"""Token prices for the dollar figures a study reports: ``registry/<study>/prices.yaml``.

The paper's Table 7 caption gives the frontier cost per episode ($0.069, "both sides billed at the
providers' list prices at evaluation time") and the token counts behind it, but no price. Prices are
therefore an input of their own kind, stated as this project's choice (``source: project``) with the
date they were read and where from; the analysis multiplies them with the episode table's token
counts (``cost_per_episode``). A model the file does not price has no cost: '—', never zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import StrictModel, display_path, load_yaml_model
from negotiation.study._layout import registry_dir

__all__ = ["ModelPrice", "TokenPrices", "load_token_prices", "spec_model"]


class ModelPrice(StrictModel):
    """List price of one model, dollars per million tokens."""

    usd_per_mtok_in: float = Field(ge=0)
    """Input (prompt) tokens."""
    usd_per_mtok_out: float = Field(ge=0)
    """Output (completion) tokens."""
    source: str = Field(min_length=1)
    """Where the number comes from (a price page and the date it was read, or the assumption made)."""


class TokenPrices(StrictModel):
    """``registry/<study>/prices.yaml``."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name."""
    source: Literal["project"]
    """Always ``project``: the study's source gives no price; these are this project's inputs."""
    reason: str = Field(min_length=1)
    """Why these prices (and what they cannot reproduce)."""
    prices: dict[str, ModelPrice]
    """Model (as a ``litellm:`` spec names it, e.g. ``anthropic/claude-sonnet-5``) -> price."""


def spec_model(spec: str) -> str:
    """``anthropic/claude-sonnet-5`` from ``litellm:anthropic/claude-sonnet-5?temperature=0.7``."""
    return spec.split(":", 1)[-1].split("?", 1)[0]


def load_token_prices(study: str, root: Path | None = None) -> TokenPrices | None:
    """``registry/<study>/prices.yaml`` or None when absent (ConfigError when malformed)."""
    path = registry_dir(study, root) / "prices.yaml"
    if not path.exists():
        return None
    loaded = load_yaml_model(TokenPrices, path, root=root)
    if loaded.study != study:
        raise ConfigError(f"{display_path(path, root)}:study: {loaded.study!r} differs from {study!r}")
    return loaded
