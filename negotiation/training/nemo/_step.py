"""One environment step over a batch of message logs, without Ray or NeMo-RL.

NeMo-RL calls the environment once per rollout turn with every active sample's message log and
``extra_env_info``. For each sample this plays the seller's newest generation on the engine,
lets the attached buyer reply (scripted or an LLM), and returns the buyer's prose wrapped in the
arm's turn tags as the next observation. Rewards follow the front-loaded floor (Appendix H):
``-λ`` on the first step and ``Eq. 1 + λ`` on the terminating step, so the driver's per-step sum
is Eq. 1 and an episode the driver cuts short keeps ``-λ``. The ``parse`` reward kind
(``NemoEnvSettings.reward``, the learning ladder's format task) pays 1 on the first step when the
seller's first turn parsed to an action, else 0, and 0 afterwards.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from pydantic import ValidationError

from negotiation.agents import make_agent
from negotiation.env import Negotiation, arespond, episode_reward, frontloaded_step_rewards, render_messages
from negotiation.errors import ConfigError
from negotiation.training.nemo._state import EpisodeState, NemoEnvSettings, replay

__all__ = ["NegotiationStepLogic", "StepOutcome", "return_metrics"]

Message = Mapping[str, Any]
AgentFactory = Callable[[str, str], Any]


@dataclass
class StepOutcome:
    """The batched answer of one step, in NeMo-RL's ``EnvironmentReturn`` field order."""

    observations: list[dict[str, str]] = field(default_factory=list)
    """One ``{"role", "content"}`` per sample; empty content once the episode is over."""
    metadata: list[dict[str, Any]] = field(default_factory=list)
    """The updated ``EpisodeState`` of each sample, as a dict."""
    next_stop_strings: list[None] = field(default_factory=list)
    """No per-sample stop strings: turns end on the stop token ids of the config."""
    rewards: list[float] = field(default_factory=list)
    """This step's reward per sample (front-loaded floor)."""
    terminateds: list[bool] = field(default_factory=list)
    """Whether the sample's episode ended on this step."""
    answers: list[str | None] = field(default_factory=list)
    """The outcome (``deal`` / ``no_deal``) of an ended episode, else ``None``."""


@dataclass
class _SampleResult:
    observation: str
    state: EpisodeState
    reward: float
    done: bool
    answer: str | None


class NegotiationStepLogic:
    """The environment's step, on plain message logs and metadata dicts."""

    def __init__(self, settings: NemoEnvSettings, *, agent_factory: AgentFactory = make_agent):
        if settings.turn_tags is None:
            raise ConfigError("env.negotiation:turn_tags: missing; derive them from the arm's "
                              "tokenizer before starting the environment")
        self.settings = settings
        self.tags = settings.turn_tags
        self._agent_factory = agent_factory
        self._buyers: dict[str, Any] = {}
        # One loop for the actor's lifetime: LLM buyers' async HTTP clients are bound to the loop
        # they first ran on, so a fresh loop per step (asyncio.run) would break them.
        self._loop = asyncio.new_event_loop()

    def step(self, message_logs: Sequence[Sequence[Message]], metadata: Sequence[Mapping[str, Any] | None],
             games: Sequence[Negotiation] | None = None) -> StepOutcome:
        """Play one seller turn (and the buyer's reply) for every sample.

        ``games``: the caller's live engine of each sample, already at the sample's state (a
        driver that keeps its episodes, as the token rollout does); played on in place instead of
        replaying every recorded turn, which made a step's cost grow with the episode's length."""
        return self._loop.run_until_complete(self.astep(message_logs, metadata, games))

    def close(self) -> None:
        """Release the event loop."""
        self._loop.close()

    def __enter__(self) -> "NegotiationStepLogic":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def astep(self, message_logs: Sequence[Sequence[Message]], metadata: Sequence[Mapping[str, Any] | None],
                    games: Sequence[Negotiation] | None = None) -> StepOutcome:
        """``step`` with the buyers' replies awaited concurrently (LLM buyers)."""
        if len(message_logs) != len(metadata) or (games is not None and len(games) != len(metadata)):
            raise ValueError(f"{len(message_logs)} message logs, {len(metadata)} metadata entries, "
                             f"{'no' if games is None else len(games)} games")
        live = games if games is not None else [None] * len(metadata)
        results = await asyncio.gather(*(self._sample(i, log, meta, game)
                                         for i, (log, meta, game) in enumerate(zip(message_logs, metadata, live))))
        out = StepOutcome()
        for result in results:
            out.observations.append({"role": "user", "content": result.observation})
            out.metadata.append(result.state.model_dump(mode="json"))
            out.next_stop_strings.append(None)
            out.rewards.append(result.reward)
            out.terminateds.append(result.done)
            out.answers.append(result.answer)
        return out

    def _state(self, index: int, meta: Mapping[str, Any] | None) -> EpisodeState:
        if meta is None:
            raise ConfigError(f"sample {index}:extra_env_info: missing; every datum carries its episode state")
        try:
            return EpisodeState.model_validate(dict(meta))
        except ValidationError as exc:
            raise ConfigError(f"sample {index}:extra_env_info: not an episode state ({exc.errors()[0]['msg']}; "
                              f"got keys {sorted(meta)})") from exc

    def _buyer(self, spec: str) -> Any:
        if spec not in self._buyers:
            self._buyers[spec] = self._agent_factory(spec, "buyer")
        return self._buyers[spec]

    async def _sample(self, index: int, log: Sequence[Message], meta: Mapping[str, Any] | None,
                      game: Negotiation | None) -> _SampleResult:
        state = self._state(index, meta)
        if not log or log[-1].get("role") != "assistant":
            role = log[-1].get("role") if log else None
            raise ValueError(f"sample {index}: the last message must be the seller's generation, got role {role!r}")
        if game is None:
            game = replay(state, self.settings)
        elif len(game.turns) != len(state.turns):
            raise ValueError(f"sample {index}: the live game has {len(game.turns)} turns, its state {len(state.turns)}")
        if game.done or game.next_role != "seller":
            raise ValueError(f"sample {index}: episode {state.domain}/{state.seed} is not waiting for the seller")
        seller_turn = game.apply(str(log[-1].get("content", "")))
        played = [seller_turn.raw]
        if not game.done:
            played.append(game.apply(await arespond(self._buyer(state.buyer), game.view())).raw)
        steps = state.seller_steps + 1
        new_state = state.model_copy(update={"turns": state.turns + tuple(played), "seller_steps": steps})
        if self.settings.reward == "parse":  # paid in full on the first step: no floor to undo later
            reward = float(seller_turn.ok) if steps == 1 else 0.0
            if game.done:
                episode = game.record(self.settings.seller_label, state.buyer)
                return _SampleResult("", new_state, reward, True, episode.outcome)
        elif game.done:
            return self._finish(game, new_state, steps)
        else:
            reward = frontloaded_step_rewards(steps, 0.0, self.settings.environment.no_deal_penalty,
                                              terminated=False)[-1]
        return _SampleResult(self.tags.observation(self._buyer_turn_text(game)), new_state, reward, False, None)

    def _buyer_turn_text(self, game: Negotiation) -> str:
        """The buyer's turn as the seller's training prompt shows it (its prose, or the template's
        placeholder for empty prose), so the rollout equals the rendered chat."""
        messages = render_messages(game.view(), self.settings.prompt_template,
                                   converge_from_turn=self.settings.environment.converge_from_turn)
        if messages[-1]["role"] != "user":
            raise ValueError(f"prompt template {self.settings.prompt_template!r} does not end the seller's chat "
                             "with the buyer's turn")
        return messages[-1]["content"].strip()  # templates trim turn content; the raw text must match

    def _finish(self, game: Negotiation, state: EpisodeState, steps: int) -> _SampleResult:
        episode = game.record(self.settings.seller_label, state.buyer)
        total = episode_reward(episode)
        reward = frontloaded_step_rewards(steps, total, self.settings.environment.no_deal_penalty)[-1]
        return _SampleResult("", state, reward, True, episode.outcome)


def return_metrics(returns: Sequence[float], settings: NemoEnvSettings) -> dict[str, float]:
    """Batch summary of episode returns (what ``global_post_process_and_metrics`` reports).

    A deal returns at least ``-(g_fmt + g_len)`` (Ũ ≥ 0) and a no-deal or truncated episode at
    most ``-λ``, so when ``λ > g_fmt + g_len`` the deal rate can be read off the returns.
    """
    values = [float(r) for r in returns]
    if not values:
        return {}
    n = len(values)
    mean = sum(values) / n
    metrics = {"mean_return": mean, "min_return": min(values), "max_return": max(values),
               "std_return": (sum((v - mean) ** 2 for v in values) / n) ** 0.5}
    env = settings.environment
    cut = env.no_deal_penalty
    if cut > env.g_fmt + env.g_len:
        metrics["deal_rate"] = sum(v > -cut for v in values) / n
    return metrics
