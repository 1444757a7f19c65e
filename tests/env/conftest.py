"""Fixtures of the env tests (helpers live in ``toy_env`` so test modules can import them)."""

import pytest

from negotiation.env import Domain, Scenario
from tests.env.toy_env import make_toy, make_toy_domain


@pytest.fixture
def toy_domain() -> Domain:
    return make_toy_domain()


@pytest.fixture
def toy(toy_domain: Domain) -> Scenario:
    return make_toy(toy_domain)
