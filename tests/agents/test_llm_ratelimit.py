"""Per-provider request and token limits, on a fake clock: the budget is spent evenly, shared by
every agent (cell) of a process, and read from params.yaml with one-line errors."""

import asyncio

import pytest

from negotiation.agents import RateLimit, RateLimiter, configure_rate_limits, provider_limiter, rate_limits_from_params
from negotiation.agents._llm_ratelimit import estimate_tokens
from negotiation.errors import ConfigError


class FakeClock:
    """Time that passes only when a waiter sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def _starts(limiter: RateLimiter, clock: FakeClock, cells: int, per_cell: int, tokens: int = 0) -> list[float]:
    starts: list[float] = []

    async def cell() -> None:
        for _ in range(per_cell):
            await limiter.acquire(tokens)
            starts.append(clock())

    async def main() -> None:
        await asyncio.gather(*(cell() for _ in range(cells)))

    asyncio.run(main())
    return sorted(starts)


def test_requests_per_minute_allow_one_minute_burst_then_the_rate():
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(requests_per_minute=60), clock=clock, sleep=clock.sleep)
    starts = _starts(limiter, clock, cells=4, per_cell=50)
    assert starts[:60] == [0.0] * 60  # a fresh budget: one minute's worth at once
    for n, t in enumerate(starts):  # then one request a second: request n starts at n - 59 s at the earliest
        assert t >= max(0.0, n - 59) - 1e-9
    assert starts[-1] == pytest.approx(200 - 60, abs=1e-6)
    for lo in range(len(starts)):  # no sliding minute after the burst holds more than 60 + 1
        window = [t for t in starts if starts[lo] < t <= starts[lo] + 60]
        assert len(window) <= 61


def test_tokens_per_minute_are_settled_with_the_counted_tokens():
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(tokens_per_minute=600), clock=clock, sleep=clock.sleep)

    async def main() -> list[float]:
        times = []
        for _ in range(5):
            await limiter.acquire(100)
            limiter.settle(100, 300)  # the provider counted three times the estimate
            times.append(clock())
        return times

    times = asyncio.run(main())
    # 600 in the bucket: two requests use 600, then each needs 300 more: 30 s apart.
    assert times[:2] == [0.0, 0.0]
    assert times[2] == pytest.approx(10.0) and times[3] == pytest.approx(40.0) and times[4] == pytest.approx(70.0)


def test_one_limiter_per_provider_is_shared_by_every_cell_of_the_process():
    clock = FakeClock()
    configure_rate_limits({"openai": RateLimit(requests_per_minute=30)}, clock=clock, sleep=clock.sleep)
    try:
        first, second = provider_limiter("openai"), provider_limiter("openai")
        assert first is second and provider_limiter("anthropic") is None
        starts = _starts(first, clock, cells=2, per_cell=30)  # two cells: 60 requests through one budget
        assert starts[29] == 0.0 and starts[30] == pytest.approx(2.0) and starts[-1] == pytest.approx(60.0)
        configure_rate_limits({"openai": RateLimit(requests_per_minute=30)}, clock=clock, sleep=clock.sleep)
        assert provider_limiter("openai") is first  # unchanged limit: the spent budget is kept
    finally:
        configure_rate_limits({})


def test_llm_agent_waits_on_its_provider_limiter(monkeypatch):
    from negotiation.agents import make_agent
    from negotiation.env import Negotiation, load_domain, make_scenario
    from negotiation.protocol import env_config
    from negotiation.study import load_study

    clock = FakeClock()
    sent = []

    class Transport:
        name = "fake"

        async def complete(self, messages, params, extra):
            from negotiation.agents._llm_transport import Completion

            sent.append(clock())
            return Completion(text='Deal. {"action": "ACCEPT"}', tokens_in=10, tokens_out=5)

    agent = make_agent("litellm:openai/gpt-test", "seller")
    agent.transport = Transport()
    configure_rate_limits({"openai": RateLimit(requests_per_minute=2)}, clock=clock, sleep=clock.sleep)
    try:
        protocol = load_study("demo").protocol
        game = Negotiation(make_scenario(load_domain("used_car"), 1), env_config(protocol, "evaluation"))
        view = game.view()

        async def three() -> None:
            for _ in range(3):
                await agent.arespond(view)

        asyncio.run(three())
    finally:
        configure_rate_limits({})
    assert sent == [0.0, 0.0, pytest.approx(30.0)]


def test_limits_from_params_yaml(tmp_path):
    params = tmp_path / "params.yaml"
    assert rate_limits_from_params(params) == {}
    params.write_text("rate_limits:\n  openai: {requests_per_minute: 500, tokens_per_minute: 200000}\n"
                      "  anthropic: {requests_per_minute: 50}\n")
    limits = rate_limits_from_params(params)
    assert limits["openai"].tokens_per_minute == 200000 and limits["anthropic"].tokens_per_minute is None
    for body, where in (("rate_limits: [1]", "rate_limits:"), ("rate_limits:\n  openai: {requests_per_minute: 0}",
                                                                   "rate_limits.openai.requests_per_minute:"),
                        ("rate_limits:\n  openai: {rpm: 5}", "rate_limits.openai.rpm:"),
                        ("rate_limits:\n  openai: {}", "rate_limits.openai:"),
                        ("rate_limits:\n  openai: {tokens_per_minute: .inf}", "rate_limits.openai.tokens_per_minute:")):
        params.write_text(body)
        with pytest.raises(ConfigError, match=f"^{params}:{where}"):
            rate_limits_from_params(params)


def test_estimate_counts_prompt_characters_and_the_completion_budget():
    assert estimate_tokens([{"role": "user", "content": "x" * 400}], 256) == 100 + 256
    assert estimate_tokens([{"role": "user", "content": "abc"}], None) == 1
