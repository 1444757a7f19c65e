"""Helpers of the evaluation tests (importable from test modules)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from negotiation.agents import parse_spec
from negotiation.agents._llm import make_litellm_agent
from negotiation.agents._llm_settings import LLMSettings
from negotiation.agents._llm_retry import RetryPolicy
from negotiation.agents._llm_sampling import Decoding
from negotiation.evaluation import Faults, StandinConfig, StandinServer, env_config
from negotiation.study import load_study

DEMO = load_study("demo").protocol
ENV = env_config(DEMO)
FAST_RETRY = RetryPolicy(max_attempts=12, base_delay_s=0.001, max_delay_s=0.01, timeout_s=0.5)


@contextmanager
def standin(**faults: Any) -> Iterator[StandinServer]:
    server = StandinServer(StandinConfig(max_turns=ENV.max_turns, faults=Faults(**faults))).start()
    try:
        yield server
    finally:
        server.stop()


def settings(retry: RetryPolicy = FAST_RETRY, **sampling: Any) -> LLMSettings:
    values = {"temperature": 1.0, "top_p": 0.95, "top_k": 64, "thinking": False, "max_tokens": 768, **sampling}
    return LLMSettings(sampling=Decoding(**values), sampling_role="self_served_seller",
                       converge_from_turn=DEMO.environment.converge_from_turn, retry=retry)


def http_agent(server: StandinServer, persona: str, role: str, options: str = "", **sampling: Any):
    spec = f"litellm:openai/{persona}?api_base={server.api_base}{options}"
    return make_litellm_agent(parse_spec(spec), role, settings(**sampling))  # type: ignore[arg-type]
