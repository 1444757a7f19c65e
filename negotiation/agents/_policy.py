"""The demo study's trainable seller: ``policy:<checkpoint dir>``.

``Policy.act(views)`` runs ONE forward pass over a batch of views, samples every head from
the policy's own distribution with uniforms drawn from each view's sample seed (so a reply is
deterministic per episode and turn, in training and in evaluation alike), and renders the
structured action as templated prose plus the JSON action. The engine parses that text like
any other agent's.

Checkpoint folder (the NeMo-RL ``step_N/`` layout's policy part): ``weights.pt`` (a torch
state dict) and ``config.json`` (``PolicyArch``: width, depth, bins, feature version). The
trainer adds ``training_info.json``.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from pydantic import ValidationError

from negotiation.agents._policy_features import FeatureBatch, view_features
from negotiation.agents._policy_net import (
    N_TOKENS,
    PolicyArch,
    PolicyNet,
    feature_tensors,
    token_logits,
)
from negotiation.agents._policy_render import render_actions
from negotiation.agents._prose import turn_rng
from negotiation.agents._spec import AgentSpec
from negotiation.env import Reply, Role, View
from negotiation.errors import ConfigError, format_validation_error

WEIGHTS_FILE = "weights.pt"
CONFIG_FILE = "config.json"
_SAMPLE_SALT = 7001  # keep the policy's draws apart from other agents' (prose: _policy_render)


@dataclass(frozen=True)
class PolicyTurns:
    """What one batched ``act`` produced: the texts and what is needed to score them later."""

    texts: list[str]
    features: FeatureBatch
    actions: np.ndarray
    """``(n, N_TOKENS)`` int64 choices in token order (accept, names, values, levels)."""


def _sample(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw per row of ``probs`` (``(..., k)``) with uniforms ``u`` (``(...)``).

    Counting cumulative mass ``<= u * total`` never lands on a zero-probability choice.
    """
    cum = np.cumsum(probs, axis=-1)
    idx = (cum <= (u * cum[..., -1])[..., None]).sum(-1)
    return np.minimum(idx, probs.shape[-1] - 1)


def _softmax(logits: torch.Tensor) -> np.ndarray:
    return torch.softmax(logits.double(), dim=-1).numpy()


class Policy:
    """A policy network with its architecture; acts on batches of views."""

    def __init__(self, arch: PolicyArch, net: PolicyNet | None = None):
        self.arch = arch
        self.net = net if net is not None else PolicyNet(arch)
        self.bins = np.linspace(-1.0, 1.0, arch.value_bins)

    @classmethod
    def init(cls, arch: PolicyArch, seed: int) -> Policy:
        """A fresh network whose weights depend on ``seed`` alone."""
        # fork_rng keeps the caller's global torch stream untouched by the init draws.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return cls(arch)

    def act(self, views: Sequence[View]) -> PolicyTurns:
        """Sample one turn for each view with one forward pass."""
        fb = view_features(views)
        actions = self.decide(fb, [(v.sample_seed, v.turn) for v in views])
        return PolicyTurns(render_actions(views, actions, self.bins), fb, actions)

    @torch.no_grad()
    def decide(self, fb: FeatureBatch, keys: Sequence[tuple[int, int]]) -> np.ndarray:
        """``(n, N_TOKENS)`` int64 actions for ``n`` rows of features, each head sampled from its
        softmax with uniforms drawn from the row's ``(sample seed, turn)`` key: one forward pass.

        A row's draw depends on its own key alone, so where the rows' views were read (this
        process or a lockstep helper, ``PolicyShards``) never changes an action.
        """
        out = self.net(feature_tensors(fb))
        u = np.stack([turn_rng(seed, turn, _SAMPLE_SALT).random(N_TOKENS) for seed, turn in keys])
        actions, start = np.zeros((len(keys), N_TOKENS), dtype=np.int64), 0
        for logits in token_logits(out):
            k = logits.shape[1]
            actions[:, start:start + k] = _sample(_softmax(logits), u[:, start:start + k])
            start += k
        return actions

    def save(self, folder: str | Path) -> None:
        """Write ``weights.pt`` and ``config.json`` into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.net.state_dict(), folder / WEIGHTS_FILE)
        config = self.arch.model_dump_json(indent=2) + "\n"
        (folder / CONFIG_FILE).write_text(config, encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> Policy:
        """Read a checkpoint folder; ``ConfigError`` names the file and the problem."""
        folder = Path(folder)
        cfg_path, w_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
        for path in (cfg_path, w_path):
            if not path.is_file():
                raise ConfigError(f"{path}:<file>: policy checkpoint file not found")
        try:
            arch = PolicyArch.model_validate(json.loads(cfg_path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{cfg_path}:line {exc.lineno}: invalid JSON: {exc.msg}") from exc
        except ValidationError as exc:
            raise ConfigError(format_validation_error(cfg_path, exc)) from exc
        policy = cls(arch)
        try:
            state = torch.load(w_path, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError, OSError) as exc:
            raise ConfigError(f"{w_path}:<file>: not a readable weights file "
                              f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})") from exc
        try:
            policy.net.load_state_dict(state)
        except (RuntimeError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{w_path}:<weights>: do not match config.json width={arch.width} "
                              f"depth={arch.depth}: {str(exc)[:200]}") from exc
        policy.net.eval()
        return policy


class PolicyAgent:
    """A ``Policy`` behind the one-agent interface (evaluation)."""

    blocking = False

    def __init__(self, spec: str, role: Role, policy: Policy):
        self.spec = spec
        self.role = role
        self.policy = policy

    @property
    def sampling_settings(self) -> Any:
        """What the harness records as sent and accepted: every head is sampled from its own
        softmax at temperature 1, with no top-p or top-k truncation."""
        from negotiation.protocol import SamplingSettings

        return SamplingSettings(temperature=1.0)

    def respond(self, view: View) -> Reply:
        return Reply(self.policy.act([view]).texts[0])

    def respond_many(self, views: Sequence[View]) -> list[Reply]:
        """Replies for several episodes at once (one forward pass)."""
        return [Reply(t) for t in self.policy.act(views).texts] if views else []


def make_policy_agent(spec: AgentSpec, role: Role) -> PolicyAgent:
    """Factory for ``policy:<checkpoint dir>`` specs (no options)."""
    spec.check_known(())
    return PolicyAgent(spec.text, role, Policy.load(spec.target))
