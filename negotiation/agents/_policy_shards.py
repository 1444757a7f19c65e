"""Lockstep games of the ``policy`` seller split over this process and helper processes.

A rollout plays many episodes in lockstep (every episode starts with the seller and the parties
alternate, so all running episodes are at the same turn). Per seller turn the policy needs ONE
forward pass over every running episode's features; everything else (reading the views into
features, rendering the sampled actions as text, parsing and applying them, the scripted buyers'
replies) is per episode. ``PolicyShards`` deals the games out to shards: shard 0 in this
process, the others each in a helper process (``python -m negotiation.agents._policy_shard_worker``,
torch-free), which do their per-episode work at the same time as shard 0. The caller gathers
one ``SellerBatch`` of all shards, runs the forward pass and samples, and hands each shard its
rows of the actions.

What a shard computes per row depends on that row's episode alone (features row by row, the
prose and sample draws seeded by the episode's sample seed and turn), and the batch is stacked in
the episodes' order, so the forward pass, the actions and the finished episodes are the same
bytes with any number of processes (``tests/agents/test_policy_shards.py``).
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, NamedTuple, Sequence

import numpy as np

from negotiation.agents._policy_features import FeatureBatch, concat_features, view_features
from negotiation.agents._policy_render import render_actions
from negotiation.env import EnvConfig, Episode, Negotiation, Scenario, episode_reward

__all__ = ["EpisodeOutcome", "LockstepShard", "PolicyShards", "SellerBatch", "outcome_of"]


class EpisodeOutcome(NamedTuple):
    """What a trainer reads of a finished episode (a few numbers, not its transcript: a helper
    sends these back instead of pickling every turn)."""

    S: float  # noqa: N815 - the paper's symbol
    """Outcome term of Eq. 1: seller Ũ on a deal, ``-λ`` otherwise."""
    reward: float
    """The seller's Eq. 1 reward (``negotiation.env.episode_reward``)."""
    deal: bool
    """Whether the episode closed with a deal."""
    n_rounds: int
    """Rounds played."""
    seller_bad_turns: int
    """Malformed seller turns."""
    seller_turns: int
    """Seller turns."""


def outcome_of(episode: Episode) -> EpisodeOutcome:
    """The ``EpisodeOutcome`` of ``episode``."""
    return EpisodeOutcome(episode.S, episode_reward(episode), episode.deal, episode.n_rounds,
                          episode.n_bad("seller"), episode.n_turns_of("seller"))


@dataclass(frozen=True)
class SellerBatch:
    """The running episodes at a seller turn: what the policy's forward pass needs."""

    index: np.ndarray
    """``(n,)`` int64 index of each row's episode among the shard's (or, merged, all) jobs."""
    features: FeatureBatch
    """One row per running episode, in ``index`` order."""
    keys: list[tuple[int, int]]
    """``(sample seed, turn)`` of each row: the key of its sample draws."""


class LockstepShard:
    """Some of a rollout's episodes, advanced one seller turn (and the buyers' replies) a call."""

    def __init__(self, jobs: Sequence[tuple[Scenario, Any, int]], env: EnvConfig, bins: np.ndarray):
        self.games = [Negotiation(scn, env, sample_seed=seed) for scn, _, seed in jobs]
        self.buyers = [buyer for _, buyer, _ in jobs]
        self.bins = bins
        self._active: list[int] = []
        self._views: list[Any] = []

    def seller_batch(self) -> SellerBatch:
        """The running episodes' features; every one of them must be at a seller turn."""
        self._active = [k for k, g in enumerate(self.games) if not g.done]
        if any(self.games[k].next_role != "seller" for k in self._active):
            raise RuntimeError("lockstep broken: a running episode is not at a seller turn")
        self._views = [self.games[k].view() for k in self._active]
        return SellerBatch(np.asarray(self._active, dtype=np.int64), view_features(self._views),
                           [(v.sample_seed, v.turn) for v in self._views])

    def advance(self, actions: np.ndarray) -> SellerBatch:
        """Play ``actions`` (``(n, N_TOKENS)``, the rows of the last batch) as the sellers' texts,
        then every running episode's buyer reply; the next seller batch."""
        if len(actions) != len(self._active):
            raise ValueError(f"{len(actions)} actions for {len(self._active)} running episodes")
        for k, text in zip(self._active, render_actions(self._views, actions, self.bins)):
            self.games[k].apply(text)
        for k, game in enumerate(self.games):
            if not game.done:
                game.apply(self.buyers[k].respond(game.view()))
        return self.seller_batch()

    def records(self, seller_spec: str) -> list[Episode]:
        """The finished episodes, in job order."""
        return [g.record(seller_spec, getattr(b, "spec", str(b))) for g, b in zip(self.games, self.buyers)]

    def outcomes(self, seller_spec: str) -> list[EpisodeOutcome]:
        """``outcome_of`` each finished episode, in job order."""
        return [outcome_of(e) for e in self.records(seller_spec)]


def _read_only(mapping: dict[Any, Any]) -> MappingProxyType:
    return MappingProxyType(mapping)


def _reduce_proxy(proxy: MappingProxyType) -> tuple[Any, tuple[dict[Any, Any]]]:
    # MappingProxyType itself cannot be pickled by reference (no importable name).
    return _read_only, (dict(proxy),)


def dumps(obj: Any) -> bytes:
    """``obj`` pickled (episodes hold read-only mappings: pickled as copies)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: _reduce_proxy}
    pickler.dump(obj)
    return buffer.getvalue()


def send(obj: Any, stream: IO[bytes]) -> None:
    """Write ``obj`` pickled to ``stream`` whole, or nothing when it cannot be pickled (a half
    message would be read as the start of the next one)."""
    stream.write(dumps(obj))
    stream.flush()


class _Helper:
    """One helper process holding one shard; requests are pickled over its stdin and stdout."""

    def __init__(self) -> None:
        # The helper imports this same checkout's package, whichever way it was installed.
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "negotiation.agents._policy_shard_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env={**os.environ, "PYTHONPATH": path})

    def request(self, payload: bytes) -> None:
        """Send one request, pickled by ``dumps``."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._gone() from None

    def reply(self) -> tuple[str, Any]:
        """``("ok", value)`` or ``("error", exception)``: the helper's answer to one request."""
        assert self.proc.stdout is not None
        try:
            return pickle.load(self.proc.stdout)
        except EOFError:
            raise self._gone() from None

    def _gone(self) -> RuntimeError:
        return RuntimeError(f"rollout helper process exited with code {self.proc.wait()} "
                            "(its traceback, if any, is above on stderr)")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()  # end of requests: the helper exits
            except BrokenPipeError:
                pass  # it is gone already; wait() below collects its exit status
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class PolicyShards:
    """A rollout's games over ``processes`` shards (this process holds the first); a context
    manager that stops its helpers on exit. ``processes=1`` starts none."""

    def __init__(self, processes: int = 1):
        if processes < 1:
            raise ValueError(f"processes must be at least 1, got {processes}")
        self._helpers = [_Helper() for _ in range(processes - 1)]
        self._local: LockstepShard | None = None
        self._owner = np.zeros(0, dtype=np.int64)

    @property
    def processes(self) -> int:
        """Shards per rollout (this process plus its helpers)."""
        return len(self._helpers) + 1

    def begin(self, jobs: Sequence[tuple[Scenario, Any, int]], env: EnvConfig, bins: np.ndarray) -> SellerBatch:
        """Start every ``(scenario, buyer agent, sample seed)`` job; the first seller batch.

        Shard ``s`` of ``n`` holds jobs ``s, s + n, s + 2n, ...``: a step's jobs come in groups of
        one scenario, and episodes of one scenario run about as long, so dealing them out keeps
        the shards' turns even (contiguous slices left one shard idle while the other finished).
        """
        n = self.processes
        self._local = None
        local = LockstepShard(jobs[0::n], env, bins)
        batches = self._round("begin", [(list(jobs[s::n]), env, bins) for s in range(1, n)], local.seller_batch)
        self._local = local
        return self._merge(batches)

    def advance(self, actions: np.ndarray) -> SellerBatch:
        """Play the last batch's ``actions`` (its rows, in order) and the buyers' replies."""
        if self._local is None:
            raise RuntimeError("advance() before begin()")
        local = self._local
        parts = [(actions[self._owner == s],) for s in range(1, self.processes)]
        return self._merge(self._round("advance", parts, lambda: local.advance(actions[self._owner == 0])))

    def records(self, seller_spec: str) -> list[Episode]:
        """Every finished episode, in job order."""
        return self._gather("records", seller_spec)

    def outcomes(self, seller_spec: str) -> list[EpisodeOutcome]:
        """``outcome_of`` every finished episode, in job order (what training reads)."""
        return self._gather("outcomes", seller_spec)

    def _gather(self, kind: str, seller_spec: str) -> list[Any]:
        if self._local is None:
            raise RuntimeError(f"{kind}() before begin()")
        parts = self._round(kind, [(seller_spec,)] * len(self._helpers), lambda: getattr(self._local, kind)(seller_spec))
        merged: list[Any] = [None] * sum(map(len, parts))
        for s, part in enumerate(parts):
            merged[s::self.processes] = part
        return merged

    def _round(self, kind: str, helper_args: list[tuple[Any, ...]], local: Any) -> list[Any]:
        """One request to every helper, ``local()`` meanwhile; ``[local's value, helper values...]``.

        Every request is pickled before any is sent, and every reply is read before anything is
        raised, so no helper is left a step behind; then the local error, else the first
        helper's error."""
        payloads = [dumps((kind, *args)) for args in helper_args]
        for helper, payload in zip(self._helpers, payloads):
            helper.request(payload)
        try:
            mine = local()
        finally:
            replies = [h.reply() for h in self._helpers]
        for status, value in replies:
            if status == "error":
                raise value
        return [mine] + [value for _, value in replies]

    def _merge(self, batches: list[SellerBatch]) -> SellerBatch:
        """One batch in job order: shard ``s``'s local row ``i`` is job ``i * n + s``."""
        n = self.processes
        if n == 1:  # one shard is the batch itself: the exact arrays of an unsharded rollout
            self._owner = np.zeros(len(batches[0].index), dtype=np.int64)
            return batches[0]
        live = [(s, b) for s, b in enumerate(batches) if len(b.index)]
        if not live:
            self._owner = np.zeros(0, dtype=np.int64)
            return batches[0]  # every episode is over
        index = np.concatenate([b.index * n + s for s, b in live])
        owner = np.concatenate([np.full(len(b.index), s, dtype=np.int64) for s, b in live])
        keys = [key for _, b in live for key in b.keys]
        order = np.argsort(index, kind="stable")
        stacked = concat_features([b.features for _, b in live])
        features = FeatureBatch(**{f: getattr(stacked, f)[order] for f in FeatureBatch.__dataclass_fields__})
        self._owner = owner[order]
        return SellerBatch(index[order], features, [keys[i] for i in order])

    def close(self) -> None:
        """Stop the helper processes."""
        for helper in self._helpers:
            helper.close()

    def __enter__(self) -> PolicyShards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
