"""``frozen_record``: a frozen dataclass whose constructor costs what a plain one costs.

A frozen dataclass's generated ``__init__`` stores every field through
``object.__setattr__`` (its own ``__setattr__`` refuses), about 0.4 µs a field on CPython
3.11, four to five times a plain attribute store. The engine builds five such records per
turn (the view, the reply, the parsed turn, the turn record and two history messages), so
that alone was a fifth of a scripted turn. ``frozen_record`` keeps everything
``dataclass(frozen=True)`` generates (equality, hash, repr, ``FrozenInstanceError`` on
assignment, ``dataclasses.replace``, pickling) and replaces only ``__init__`` by one that
writes the instance dictionary directly, which is what ``object.__setattr__`` does for a
field. ``tests/env/test_record.py`` checks it against ``dataclass(frozen=True)`` itself.

Only plain fields are supported (positional-or-keyword, ``init=True``, no ``InitVar``, no
``__post_init__``); anything else is refused at class creation rather than handled halfway.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")
_NO_VALUE = object()  # the parameter default standing for "call the field's default_factory"


def _parameters(cls: type) -> tuple[list[str], list[str], dict[str, Any]]:
    """``(parameters, body lines, globals)`` of the fast ``__init__`` of a frozen dataclass.

    The generated names (self, its dictionary, defaults, factories) all start with
    ``__record_``, which no field name may start with, so a field never shadows one.
    """
    params, body = ["__record_self"], ["    __record_dict = __record_self.__dict__"]
    env: dict[str, Any] = {"__record_no_value": _NO_VALUE}
    for f in dataclasses.fields(cls):
        if not f.init or f.kw_only or f.name.startswith("__record_"):
            raise TypeError(f"frozen_record {cls.__name__}.{f.name}: only plain init fields are supported")
        if f.default is not dataclasses.MISSING:
            env[f"__record_default_{f.name}"] = f.default
            params.append(f"{f.name}=__record_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"__record_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=__record_no_value")
            body.append(f"    if {f.name} is __record_no_value:\n        {f.name} = __record_factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"    __record_dict[{f.name!r}] = {f.name}")
    return params, body, env


@dataclass_transform(frozen_default=True)
def frozen_record(cls: type[T]) -> type[T]:
    """``dataclass(frozen=True)`` with a constructor that stores fields without ``object.__setattr__``."""
    if "__slots__" in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"frozen_record {cls.__name__}: __slots__ and __post_init__ are not supported")
    cls = dataclasses.dataclass(frozen=True)(cls)
    params, body, env = _parameters(cls)
    source = f"def __init__({', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, env)  # noqa: S102 - generated from the class's own field names, as dataclasses does
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[misc]
    return cls
