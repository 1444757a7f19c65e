"""The registered seller as an MLflow ``pyfunc`` model: ``mlflow.pyfunc.load_model(uri).predict(views)``.

This module imports MLflow at the top (``PythonModel`` is the base class), so the tracking package
exports ``SellerModel`` lazily: a trainer that only records its run never imports MLflow.

A model folder holds the arm's ``seller.json`` (the spec it was evaluated with) and, for a seller
with weights, a copy of its checkpoint folder (optimizer state left out). Loading rebuilds the
agent from the spec with its target pointed at that copy; a checkpoint too large to copy
(``negotiation.tracking.save_seller_model``) is read from its path in the checkout instead.
``predict`` takes one seller ``View`` or a list of them (``negotiation.env.View``: what the
seller sees before it speaks) and returns the seller's reply texts, as the engine would get them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import mlflow.pyfunc

SELLER_ARTIFACT = "seller"
"""Key of the ``seller.json`` copy among the model's artifacts."""
CHECKPOINT_ARTIFACT = "checkpoint"
"""Key of the checkpoint folder copy among the model's artifacts (absent for scripted sellers)."""


def seller_spec(record: dict[str, Any], checkpoint: str | None) -> str:
    """The record's seller spec, its target replaced by ``checkpoint`` when one is given."""
    from negotiation.agents import parse_spec

    spec = parse_spec(record["seller"])
    if checkpoint is None:
        return spec.text
    query = f"?{urlencode(spec.options)}" if spec.options else ""
    return f"{spec.kind}:{checkpoint}{query}"


def build_seller(record: dict[str, Any], checkpoint: str | None) -> Any:
    """The seller agent of a ``seller.json`` record (LLM kinds with the study's settings)."""
    from negotiation.agents import agent_kind, make_agent

    spec = seller_spec(record, checkpoint)
    if not agent_kind(spec).reads_sampling:
        return make_agent(spec, "seller")
    from negotiation.agents import RetryPolicy
    from negotiation.evaluation import agent_factory
    from negotiation.study import load_study

    return agent_factory(load_study(record["study"]).protocol, retry=RetryPolicy(), max_concurrency=1)(spec, "seller")


class SellerModel(mlflow.pyfunc.PythonModel):
    """A study arm's seller: ``predict(views)`` -> the seller's reply text for each view."""

    def load_context(self, context: Any) -> None:
        record = json.loads(Path(context.artifacts[SELLER_ARTIFACT]).read_text(encoding="utf-8"))
        self.record = record
        self.agent = build_seller(record, context.artifacts.get(CHECKPOINT_ARTIFACT))

    def predict(self, context, model_input, params=None):  # no type hints: MLflow would validate inputs by them
        """Reply texts for a ``View`` or a sequence of them (one forward pass for policy sellers)."""
        views = [model_input] if hasattr(model_input, "turn") else list(model_input)
        if hasattr(self.agent, "respond_many"):
            return [reply.text for reply in self.agent.respond_many(views)]
        return [self.agent.respond(view).text for view in views]


__all__ = ["CHECKPOINT_ARTIFACT", "SELLER_ARTIFACT", "SellerModel", "build_seller", "seller_spec"]
