"""Fixtures shared by the test packages: a private copy of the protocol and registry data, safe to tamper with."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from negotiation.study import default_root

REPO = default_root()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """``tmp_path`` holding protocol/ (domains, demo, paper) and registry/ as committed."""
    for part in ("protocol", "registry"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def edit():
    """``edit(path, old, new)``: replace the one exact occurrence of ``old`` in a file."""
    return _edit


def tiny_lm_protocol():
    """The lm study's protocol with a corpus cut to one persona and one seed per domain, so a
    tokenizer trains in about a second (the shapes and the template are the study's own)."""
    from negotiation.study import load_study

    protocol = load_study("lm").protocol
    corpus = protocol.warm_start.corpus.model_copy(update={
        "sellers": protocol.warm_start.corpus.sellers[:1], "train_seeds_per_domain": 1,
        "validation_seeds_per_domain": 1})
    recipe = protocol.warm_start.model_copy(update={
        "corpus": corpus, "steps": 2, "batch_sequences": 2, "warmup_steps": 1, "validation_every": 2,
        "validation_chats": 2})
    return protocol.model_copy(update={"warm_start": recipe})


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face folder holding the lm study's smallest size (``lm_xs``), untrained, with a
    tokenizer trained on a cut corpus: what ``hf:``/``vllm:`` sellers and trainers load. Built
    once per test session in a few seconds; treat it as read-only (copy it to change it)."""
    from negotiation.lm import write_base, write_tokenizer

    protocol = tiny_lm_protocol()
    base = tmp_path_factory.mktemp("tiny_lm")
    write_tokenizer(protocol, base / "tokenizer")
    write_base(protocol, "lm_xs", base / "tokenizer", base / "lm_xs", steps=0)
    return base / "lm_xs"
