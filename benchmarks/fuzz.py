"""Fuzz the model-output path: parse -> ledger -> score -> tables must never raise.

Real transcripts (scripted sellers and buyers on every domain of the demo study) are mutated
the way models and proxies break text: digits (1e309, NaN, 5,000-digit integers, -0),
nesting (values wrapped thousands deep, brace floods), encodings (lone surrogates, ``\\ud800``
escapes, NUL, BOM, bytes read as Latin-1), truncation, duplicate keys, chat-template tags,
repetition and megabyte replies; a share of messages is random junk over JSON's alphabet.
Every message is played as a turn of an episode (``Negotiation.apply``: parse, ledger, issue
counts), every finished episode is scored and tabulated (``episodes_to_frames``) and every
batch written as Parquet. Usage::

    python benchmarks/fuzz.py [--messages 1000000] [--seed 0] [--batch 2000]
    python benchmarks/fuzz.py --small          # CI: 3,000 messages

Prints messages/s (wall and per CPU second: the machine may be shared), the worst CPU time
of one turn per KB (messages of at least 1 KB) and the number of
exceptions by stage; exit status 1 when any stage raised.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import sys
import time
import traceback
from collections import Counter
from typing import Callable

import numpy as np

from negotiation.agents import make_agent
from negotiation.cli import env_config_for
from negotiation.env import (
    EnvConfig, Negotiation, episodes_to_frames, load_domains, make_scenario, run_episode,
)

PERSONAS = ["scripted:boulware", "scripted:conceder", "scripted:linear", "scripted:titfortat"]
TAGS = ["<|im_end|>", "<|eot_id|>", "[INST]", "</s>", "<start_of_turn>", "<|channel|>", "<think>"]
DIGITS = ["1e309", "-1e400", "NaN", "Infinity", "-Infinity", "-0", "1" * 400, "9" * 5000,
          "0.0000000000000000000001", "12345678901234567890", "1e-400", "007", "1.5e+308"]


def real_messages(study: str) -> list[str]:
    """Raw messages of scripted episodes on every domain, every persona pair, two seeds."""
    config = env_config_for(study, "evaluation")
    texts = []
    for name, domain in sorted(load_domains().items()):
        for seed in (11, 12):
            scenario = make_scenario(domain, seed)
            for seller in PERSONAS:
                for buyer in PERSONAS:
                    episode = run_episode(scenario, make_agent(seller, "seller"),
                                          make_agent(buyer, "buyer"), config)
                    texts.extend(t.raw for t in episode.turns)
    return texts


def _digits(text: str, rng: np.random.Generator) -> str:
    import re
    return re.sub(r"-?\d+(?:\.\d+)?", lambda m: DIGITS[rng.integers(len(DIGITS))] if rng.random() < 0.5
                  else m.group(0), text)


def _nest(text: str, rng: np.random.Generator) -> str:
    depth = int(rng.choice([2, 17, 200, 1_500, 20_000], p=[0.3, 0.3, 0.2, 0.1, 0.1]))
    where = text.find('"value":')
    if where < 0:
        return "{" * depth + text
    cut = where + len('"value":')
    return text[:cut] + "[" * depth + text[cut:].replace("}", "]" * depth + "}", 1)


def _encoding(text: str, rng: np.random.Generator) -> str:
    kind = rng.integers(5)
    if kind == 0:
        return text.replace("e", "\ud800", 2)
    if kind == 1:
        return text.replace('"name": "', '"name": "\\ud800\\udfff\\u0000', 1)
    if kind == 2:
        return "\ufeff" + text.replace(" ", "\x00", 3)
    if kind == 3:
        return text.encode("utf-8", "surrogatepass").decode("latin-1")
    return text.encode("utf-16-le", "surrogatepass").decode("utf-8", "surrogateescape")


def _truncate(text: str, rng: np.random.Generator) -> str:
    return text[: int(rng.integers(0, len(text) + 1))]


def _duplicate_keys(text: str, rng: np.random.Generator) -> str:
    return text.replace('"action": "', '"action": "ACCEPT", "action": "', 1).replace(
        '"terms": [', '"terms": 5, "terms": [', int(rng.integers(0, 2)))


def _template(text: str, rng: np.random.Generator) -> str:
    at = int(rng.integers(0, len(text) + 1))
    return text[:at] + TAGS[rng.integers(len(TAGS))] + text[at:]


def _repeat(text: str, rng: np.random.Generator) -> str:
    return text * int(rng.choice([2, 3, 5, 10, 50, 400], p=[0.3, 0.3, 0.2, 0.1, 0.07, 0.03]))


def _megabyte(text: str, rng: np.random.Generator) -> str:
    unit = text if rng.random() < 0.5 else rng.choice(["{", '{"a":', "[", "\\", '{"a":1 '])
    return unit * (1_000_000 // max(1, len(unit)))


def _junk(text: str, rng: np.random.Generator) -> str:
    alphabet = list('{}[]":,\\ 0123456789eE.-+aNIfinty') + ["\ud800", "COUNTER", "ACCEPT", "terms"]
    return "".join(rng.choice(alphabet, size=int(rng.integers(0, 400))))


MUTATIONS: list[tuple[float, Callable[[str, np.random.Generator], str]]] = [
    (0.16, _digits), (0.06, _nest), (0.12, _encoding), (0.14, _truncate), (0.10, _duplicate_keys),
    (0.10, _template), (0.05, _repeat), (0.0001, _megabyte), (0.12, _junk),
]


def mutate(text: str, rng: np.random.Generator) -> str:
    """``text`` with 0-3 mutations applied (an unmutated real message stays in the mix)."""
    for _ in range(int(rng.integers(0, 4))):
        r, acc = rng.random(), 0.0
        for weight, mutation in MUTATIONS:
            acc += weight
            if r < acc:
                text = mutation(text, rng)
                break
    return text


class Fuzz:
    """Plays mutated messages as turns and tabulates finished episodes, counting exceptions."""

    def __init__(self, config: EnvConfig, batch: int):
        self.config, self.batch = config, batch
        self.scenarios = [make_scenario(d, 7) for _, d in sorted(load_domains().items())]
        self.exceptions: Counter[str] = Counter()
        self.episodes: list = []
        self.game: Negotiation | None = None
        self.worst_per_kb = self.worst_s = 0.0
        self.worst_len = 0

    def _fail(self, stage: str, exc: BaseException) -> None:
        if not self.exceptions:
            traceback.print_exception(exc, file=sys.stderr)
        self.exceptions[f"{stage}: {type(exc).__name__}"] += 1
        self.game = None

    def play(self, text: str, i: int) -> None:
        if self.game is None:
            self.game = Negotiation(self.scenarios[i % len(self.scenarios)], self.config)
        start = time.thread_time()  # CPU time of this thread: other work on the machine is not counted
        try:
            self.game.apply(text)
        except Exception as exc:  # noqa: BLE001 - counted, reported and failing the run
            self._fail("apply", exc)
            return
        took = time.thread_time() - start
        self.worst_s = max(self.worst_s, took)
        if len(text) >= 1024 and took / (len(text) / 1024) > self.worst_per_kb:
            self.worst_per_kb, self.worst_len = took / (len(text) / 1024), len(text)
        if self.game.done:
            try:
                self.episodes.append(self.game.record("fuzz", "fuzz"))
            except Exception as exc:  # noqa: BLE001
                self._fail("score", exc)
            self.game = None
        if len(self.episodes) >= self.batch:
            self.flush()

    def flush(self) -> None:
        try:
            episodes, turns = episodes_to_frames(self.episodes, {"arm": "fuzz", "study": "fuzz"})
            for frame in (episodes, turns):
                frame.to_parquet(io.BytesIO(), index=False)
            json.dumps([e.final_ledger.copy() for e in self.episodes], default=repr)
        except Exception as exc:  # noqa: BLE001
            self._fail("tables", exc)
        self.episodes = []
        gc.collect()  # collections run here, not inside a timed turn


def run_part(messages: int, seed: int, batch: int, study: str) -> dict:
    """Fuzz ``messages`` messages from generator ``seed``; the figures of this part."""
    rng = np.random.default_rng(seed)
    base = real_messages(study)
    fuzz = Fuzz(env_config_for(study, "evaluation"), batch)
    gc.disable()
    cpu = time.process_time()
    for i in range(messages):
        fuzz.play(mutate(base[int(rng.integers(len(base)))], rng), i)
    fuzz.flush()
    return {"messages": messages, "base": len(base), "cpu": time.process_time() - cpu, "worst_s": fuzz.worst_s,
            "worst_per_kb": fuzz.worst_per_kb, "worst_len": fuzz.worst_len, "exceptions": fuzz.exceptions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=2000, help="episodes per table")
    parser.add_argument("--study", default="demo")
    parser.add_argument("--workers", type=int, default=1, help="processes, each with its own seed (seed + k)")
    parser.add_argument("--small", action="store_true", help="CI: 3,000 messages in batches of 500, one worker")
    args = parser.parse_args(argv)
    if args.small:
        args.messages, args.batch, args.workers = 3_000, 500, 1
    shares = [args.messages // args.workers + (k < args.messages % args.workers) for k in range(args.workers)]
    start = time.perf_counter()
    if args.workers == 1:
        parts = [run_part(shares[0], args.seed, args.batch, args.study)]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers) as pool:
            parts = list(pool.map(run_part, shares, [args.seed + k for k in range(args.workers)],
                                  [args.batch] * args.workers, [args.study] * args.workers))
    elapsed = time.perf_counter() - start
    cpu = sum(p["cpu"] for p in parts)
    worst = max(parts, key=lambda p: p["worst_per_kb"])
    exceptions: Counter[str] = sum((p["exceptions"] for p in parts), Counter())
    print(f"{args.messages:,} messages ({parts[0]['base']:,} real ones mutated, {args.workers} worker(s)) in "
          f"{elapsed:.1f} s wall, {cpu:.1f} s CPU: {args.messages / elapsed:,.0f} messages/s wall, "
          f"{args.messages / cpu:,.0f} per CPU second (mutation and tables included)")
    print(f"worst turn: {max(p['worst_s'] for p in parts) * 1e3:.1f} ms CPU; worst per KB: "
          f"{worst['worst_per_kb'] * 1e3:.3f} ms/KB (a {worst['worst_len']:,}-character message)")
    print(f"exceptions: {sum(exceptions.values())}", dict(exceptions) or "")
    return 1 if exceptions else 0


if __name__ == "__main__":
    sys.exit(main())
