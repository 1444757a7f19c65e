"""``frozen_record`` builds what ``dataclass(frozen=True)`` builds, only faster to construct."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from negotiation.env._record import frozen_record

values = st.one_of(st.integers(), st.text(max_size=5), st.none(), st.lists(st.integers(), max_size=3).map(tuple))


@dataclass(frozen=True)
class Plain:
    """The plain reference."""

    a: int
    b: Any
    c: str = "default"
    d: dict = field(default_factory=lambda: {"k": 1})


@frozen_record
class Fast:
    """The same body under ``frozen_record``."""

    a: int
    b: Any
    c: str = "default"
    d: dict = field(default_factory=lambda: {"k": 1})


def _fields(record: Any) -> tuple:
    return tuple(getattr(record, f.name) for f in dataclasses.fields(record))


@settings(max_examples=200, deadline=None)
@given(a=values, b=values, c=st.text(max_size=5), use_keywords=st.booleans(), give_defaults=st.booleans())
def test_same_instances_as_a_frozen_dataclass(a, b, c, use_keywords, give_defaults):
    plain, fast = Plain, Fast
    args: tuple = (a, b, c, {"x": 2}) if give_defaults else (a, b)
    names = ("a", "b", "c", "d")[:len(args)]
    kwargs = dict(zip(names, args)) if use_keywords else {}
    p = plain(**kwargs) if use_keywords else plain(*args)
    f = fast(**kwargs) if use_keywords else fast(*args)
    assert _fields(p) == _fields(f)
    assert repr(p).replace("Plain", "Fast") == repr(f)
    assert f == fast(*_fields(f)) and f != plain(*_fields(f))  # dataclass equality: same class only
    assert dataclasses.replace(f, a=7) == fast(7, f.b, f.c, f.d)
    assert pickle.loads(pickle.dumps(f)) == f
    assert copy.deepcopy(f) == f


def test_frozen_and_default_factory_called_per_instance():
    fast = Fast
    one, two = fast(1, 2), fast(1, 2)
    assert one.d == {"k": 1} and one.d is not two.d
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del one.b
    with pytest.raises(TypeError):
        fast(1)  # a required field missing, as a dataclass refuses it
    with pytest.raises(TypeError):
        fast(1, 2, z=3)
    assert hash(fast(1, 2, "x", None)) == hash(fast(1, 2, "x", None))  # type: ignore[arg-type]


def test_unsupported_shapes_are_refused():
    with pytest.raises(TypeError, match="__post_init__"):
        frozen_record(type("P", (), {"__annotations__": {"a": int}, "__post_init__": lambda self: None}))
    with pytest.raises(TypeError, match="plain init fields"):
        frozen_record(type("K", (), {"__annotations__": {"a": int}, "a": field(kw_only=True)}))
    with pytest.raises(TypeError, match="plain init fields"):
        frozen_record(type("I", (), {"__annotations__": {"a": int}, "a": field(init=False, default=1)}))
