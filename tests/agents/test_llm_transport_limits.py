"""A provider cannot hold a call past its deadline, fill memory with its reply, or stall retries forever.

Regression tests for the second hostile round: a reply that dribbled one byte a second took 181 s
under ``--timeout 5`` (httpx's timeout is per read), a 300 MB chunked body reached 1.25 GB of
memory, and ``--backoff 1e300`` had no bound.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Iterable, Iterator

import pytest
from pydantic import ValidationError

from negotiation.agents._llm_retry import MAX_BACKOFF_S, RetryPolicy
from negotiation.agents._llm_transport import CallFailure, HttpTransport
from tests.agents.test_llm_transport_anomalies import GOOD
from tests.cli.cli_runner import assert_one_line_error, nego


class TrickleServer:
    """Sends ``pieces`` (bytes) ``pause`` seconds apart, counting the bytes sent; stops when the
    client hangs up."""

    def __init__(self, pieces: Iterable[bytes], pause: float):
        self.pieces, self.pause, self.sent = pieces, pause, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.api_base = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.recv(65536)
            try:
                for piece in self.pieces:
                    conn.sendall(piece)
                    self.sent += len(piece)
                    time.sleep(self.pause)
                # Close gently: a close with unread request bytes sends a reset, which the client
                # can see before it has read the reply.
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(5)
                while conn.recv(65536):
                    pass
            except OSError:
                return  # the client hung up: what the test wants

    def close(self) -> None:
        self.sock.close()


def chunked(chunk: bytes, count: int) -> Iterator[bytes]:
    """A 200 reply's head, then ``count`` chunks of ``chunk`` in chunked transfer encoding."""
    yield CHUNKED
    for _ in range(count):
        yield b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    yield b"0\r\n\r\n"


CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


def call(server: TrickleServer, **transport: object) -> tuple[BaseException | None, float]:
    t = HttpTransport(server.api_base, "m", api_key_env=None, max_connections=1,
                      **{"timeout_s": 5.0, **transport})  # type: ignore[arg-type]

    async def go() -> None:
        try:
            await t.complete([{"role": "user", "content": "x"}], {}, {})
        finally:
            await t.aclose()

    start = time.monotonic()
    try:
        asyncio.run(go())
    except CallFailure as exc:
        return exc, time.monotonic() - start
    return None, time.monotonic() - start


def test_a_reply_dribbled_a_byte_at_a_time_ends_at_the_deadline():
    server = TrickleServer(chunked(b" ", 10_000), pause=0.1)  # every read well inside the timeout
    try:
        failure, seconds = call(server, timeout_s=1.0)
    finally:
        server.close()
    assert failure is not None and failure.error_class == "Timeout" and failure.transient
    assert seconds < 2.0 * 1.0 + 0.5  # twice the timeout for the whole exchange, not a timeout per read


def test_slowly_sent_headers_end_at_the_deadline():
    server = TrickleServer((bytes([b]) for b in CHUNKED), pause=0.05)  # the head, a byte every 0.05 s
    try:
        failure, seconds = call(server, timeout_s=0.5)
    finally:
        server.close()
    assert failure is not None and failure.error_class == "Timeout" and seconds < 2.0 * 0.5 + 0.5


def test_a_runaway_body_is_cut_at_the_size_cap_and_not_retried():
    server = TrickleServer(chunked(b"x" * 65536, 4_800), pause=0)  # 300 MiB offered
    try:
        failure, _ = call(server, max_reply_bytes=1 << 20)
    finally:
        server.close()
    assert failure is not None and failure.error_class == "ReplyTooLarge" and not failure.transient
    assert server.sent < 64 << 20  # the client stopped reading long before the end


def test_a_reply_within_the_cap_and_deadline_is_read_whole():
    server = TrickleServer(chunked(GOOD, 1), pause=0)
    try:
        failure, _ = call(server, max_reply_bytes=len(GOOD))
    finally:
        server.close()
    assert failure is None


@pytest.mark.parametrize("field", ["base_delay_s", "max_delay_s"])
def test_backoff_is_bounded(field):
    with pytest.raises(ValidationError):
        RetryPolicy(**{field: 1e300})
    assert RetryPolicy(**{field: MAX_BACKOFF_S}).model_dump()[field] == MAX_BACKOFF_S


@pytest.mark.parametrize("flag", ["--backoff", "--backoff-max"])
def test_evaluate_refuses_an_unbounded_backoff_in_one_line(flag, tmp_path):
    result = nego("evaluate", "--seller", "scripted:boulware", "--out", str(tmp_path / "o"), flag, "1e300")
    assert_one_line_error(result, flag)
