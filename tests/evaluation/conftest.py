"""Fixtures of the evaluation tests: a stand-in server per test and the demo protocol."""

from __future__ import annotations

import pytest

from tests.evaluation.helpers import DEMO, standin


@pytest.fixture
def server():
    """A fault-free stand-in server on a free port."""
    with standin() as srv:
        yield srv


@pytest.fixture(scope="session")
def demo_protocol():
    return DEMO
