"""A lockstep helper process of ``PolicyShards``: ``python -m negotiation.agents._policy_shard_worker``.

Reads pickled requests from stdin, one at a time — ``("begin", jobs, env, bins)``,
``("advance", actions)``, ``("records", seller_spec)``, ``("outcomes", seller_spec)`` — and writes each reply to stdout as
``("ok", value)``, or ``("error", exception)`` when the request raised (the parent raises it
again). End of stdin ends the process. It never imports torch: the forward pass stays in the
parent.
"""

from __future__ import annotations

import pickle
import sys
import traceback
from typing import Any

from negotiation.agents._policy_shards import LockstepShard, send


def _serve(requests: Any, replies: Any) -> None:
    shard: LockstepShard | None = None
    while True:
        try:
            message = pickle.load(requests)
        except EOFError:
            return
        except (pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError) as exc:
            # The stream's position is unknown now: answer once, then stop (the parent raises it).
            send(("error", RuntimeError(f"rollout helper could not read a request "
                                        f"({type(exc).__name__}: {exc})")), replies)
            return
        kind, *args = message
        try:
            if kind == "begin":
                shard = LockstepShard(*args)
                value: Any = shard.seller_batch()
            elif shard is None:
                raise RuntimeError(f"request {kind!r} before 'begin'")
            elif kind == "advance":
                value = shard.advance(*args)
            elif kind == "records":
                value = shard.records(*args)
            elif kind == "outcomes":
                value = shard.outcomes(*args)
            else:
                raise RuntimeError(f"unknown request {kind!r}")
        except Exception as exc:  # noqa: BLE001 - sent to the parent, which raises it
            traceback.print_exc(file=sys.stderr)
            send(("error", _picklable(exc)), replies)
            continue
        send(("ok", value), replies)


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except (pickle.PicklingError, TypeError, AttributeError):
        return RuntimeError(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    # stdout carries the replies: anything printed by mistake goes to stderr instead.
    replies, sys.stdout = sys.stdout.buffer, sys.stderr
    _serve(sys.stdin.buffer, replies)
