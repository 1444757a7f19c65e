"""A new agent kind of each sort is one file: its factory and its ``AgentKind`` registration.

Each test writes that one module into a temporary folder, imports it, and shows the harness
uses the record end to end: the factories build it, the seller's sampling is its record's, the
served kind gets the serving settings and GPUs, the weights of a local checkpoint are hashed.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from pathlib import Path

import pytest

from negotiation.agents import AgentKind, RetryPolicy, agent_kind, default_sampling_role, make_agent, parse_spec
from negotiation.agents import _kinds
from negotiation.errors import ConfigError
from negotiation.evaluation import CellSpec, RunOptions, agent_factory, evaluate_cell
from negotiation.study import load_study

ROOT = Path(__file__).resolve().parents[2]
DEMO = load_study("demo").protocol

SCRIPTED = '''
from negotiation.agents import AgentKind, make_scripted, register_kind

def make(spec, role):
    return make_scripted(spec, role)

register_kind(AgentKind("{name}", "{name}:make", "reference_seller"))
'''
HTTP_LLM = '''
from negotiation.agents import AgentKind, register_kind

def make(spec, role, settings=None):
    return {{"spec": spec.text, "role": role, "settings": settings}}

register_kind(AgentKind("{name}", "{name}:make", "reference_seller", reads_sampling=True))
'''
SELF_SERVED = '''
from negotiation.agents import AgentKind, register_kind

def make(spec, role, settings=None, serve=None):
    return {{"spec": spec.text, "role": role, "settings": settings, "serve": serve}}

register_kind(AgentKind("{name}", "{name}:make", "self_served_seller", reads_sampling=True,
                        local_weights=True, served=True))
'''


@pytest.fixture
def add_kind(tmp_path, monkeypatch):
    """``add_kind(name, source)``: write the kind's one module, import it; the registry is restored."""
    monkeypatch.setattr(_kinds, "_KINDS", dict(_kinds._KINDS))
    monkeypatch.syspath_prepend(str(tmp_path))

    def add(name: str, source: str) -> AgentKind:
        (tmp_path / f"{name}.py").write_text(source.format(name=name))
        importlib.import_module(name)
        assert [p.name for p in tmp_path.iterdir() if p.suffix == ".py"] == [f"{name}.py"]  # one file
        return agent_kind(name)

    return add


def build(spec: str, role: str, **options):
    return agent_factory(DEMO, retry=RetryPolicy(), max_concurrency=2, **options)(spec, role)


def test_a_scripted_kind_is_one_file_and_plays_a_cell(add_kind, tmp_path):
    kind = add_kind("kind_scripted_x", SCRIPTED)
    assert make_agent("kind_scripted_x:boulware", "seller").strategy.e == pytest.approx(0.2)
    assert default_sampling_role("kind_scripted_x", "seller") == "reference_seller"
    assert not (kind.reads_sampling or kind.served or kind.local_weights)
    cell = CellSpec(study="demo", arm="x", seller="kind_scripted_x:boulware", buyers={"con": "scripted:conceder"},
                    domains=("used_car",), seeds=(7,), dirichlet_alpha=DEMO.environment.dirichlet_alpha)
    result = asyncio.run(evaluate_cell(cell, tmp_path / "out", DEMO, protocol_hash="h" * 64,
                                       options=RunOptions(deviation=1)))
    assert result.ok and list(result.episodes["seller"]) == ["kind_scripted_x:boulware"]


def test_an_http_llm_kind_is_one_file_and_gets_the_reference_sampling(add_kind):
    add_kind("kind_http_x", HTTP_LLM)
    seller, buyer = build("kind_http_x:provider/model", "seller"), build("kind_http_x:provider/model", "buyer")
    assert (seller["settings"].sampling_role, buyer["settings"].sampling_role) == ("reference_seller", "buyer")
    assert seller["settings"].sampling.temperature == DEMO.sampling.reference_seller.temperature
    assert "serve" not in seller


def test_a_self_served_kind_is_one_file_and_is_served_with_its_weights_hashed(add_kind, tmp_path):
    from negotiation.evaluation._run import _seller_gpus
    from negotiation.evaluation._weights import folder_sha256, seller_weights_sha256

    add_kind("kind_served_x", SELF_SERVED)
    serve = object()
    seller = build("kind_served_x:/ckpt?tp=2", "seller", serve=serve)
    assert seller["settings"].sampling_role == "self_served_seller" and seller["serve"] is serve
    cell = CellSpec(study="demo", arm="x", seller="kind_served_x:/ckpt?tp=2", buyers={"b": "scripted:conceder"},
                    domains=("used_car",), seeds=(1,), dirichlet_alpha=1.0)
    assert _seller_gpus(cell, None) == 2
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "weights.bin").write_bytes(b"w")
    assert seller_weights_sha256(f"kind_served_x:{tmp_path / 'ckpt'}") == folder_sha256(tmp_path / "ckpt")


def test_an_unknown_kind_is_an_error_naming_the_spec_never_a_default():
    for call in (lambda: parse_spec("nope:x"), lambda: default_sampling_role("nope:x", "seller"),
                 lambda: build("nope:x", "seller")):
        with pytest.raises(ConfigError, match=r"agent spec 'nope:x':kind: unknown kind 'nope'; known: hf, litellm"):
            call()


def test_no_module_tests_a_kind_by_its_spec_prefix():
    pattern = re.compile(r'startswith\(\s*"(hf|vllm|litellm|policy|scripted):|'
                         r'kind\s*(==|!=|in|not in)\s*\(?\s*"(hf|vllm|litellm|scripted)"')
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "negotiation").rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []


def where_a_change_goes(change: str) -> str:
    """The bullet of docs/architecture.md's "Where a change goes" that starts ``- **<change>**``."""
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    found = re.search(rf"^- \*\*{re.escape(change)}\*\*(.*?)(?=^- \*\*|^#|\Z)", text, re.M | re.S)
    assert found, f"docs/architecture.md has no '{change}' line"
    return " ".join(found.group(1).split())


def test_the_architecture_table_says_a_kind_is_one_file_and_its_registration():
    row = where_a_change_goes("Add an agent kind")
    assert row.startswith("[1]") and "register_kind(AgentKind(" in row and "agents/_kinds.py" in row
