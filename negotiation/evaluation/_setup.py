"""What the harness takes from a study's protocol: environment, agents' settings, cells.

Nothing here restates a number: the environment constants, sampling per role, converge turn,
token cap, serving arguments, domains, seeds and buyers are all read from the loaded
``negotiation.protocol.Protocol``.
"""

from __future__ import annotations

from typing import Any

from negotiation.agents import (RetryPolicy, SamplingRole, ServeSettings, agent_kind, default_sampling_role,
                                kind_factory, llm_settings, make_agent, parse_spec)
from negotiation.protocol import env_config  # re-exported: the harness's entry points use it
from negotiation.env import EnvConfig
from negotiation.errors import ConfigError
from negotiation.names import check_name
from negotiation.evaluation._cell import AgentFactory, CellSpec

_ARM_SAMPLING: dict[str, SamplingRole] = {"base": "self_served_seller", "trained": "self_served_seller",
                                           "reference": "reference_seller"}




def arm_sampling_role(arm: Any | None) -> SamplingRole | None:
    """The seller's sampling setting for an arm of the matrix (``None``: decide by agent kind)."""
    return None if arm is None else _ARM_SAMPLING[arm.kind]


def agent_factory(protocol: Any, *, retry: RetryPolicy, max_concurrency: int,
                  seller_sampling: SamplingRole | None = None, serve: ServeSettings | None = None) -> AgentFactory:
    """``(spec, role) -> agent`` with the protocol's settings for kinds that read them
    (``AgentKind.reads_sampling``) and its serving settings for served kinds."""

    def build(spec_text: str, role: str) -> Any:
        spec = parse_spec(spec_text)
        kind = agent_kind(spec_text)
        if not kind.reads_sampling:
            return make_agent(spec, role)  # type: ignore[arg-type]
        sampling_role = seller_sampling if role == "seller" and seller_sampling else \
            default_sampling_role(spec.kind, role)  # type: ignore[arg-type]
        settings = llm_settings(protocol, sampling_role, retry=retry, max_concurrency=max_concurrency)
        extra = {"serve": serve if serve is not None else _spec_serve(spec, protocol)} if kind.served else {}
        return kind_factory(kind, spec_text)(spec, role, settings, **extra)

    return build


def _spec_serve(spec: Any, protocol: Any) -> ServeSettings | None:
    """A served spec's ``size=`` settings from the caller's protocol when the spec's study (default
    ``paper``, as the agent layer reads it) is that protocol's, so the study is not loaded again."""
    size = spec.option("size", None)
    if size is None or spec.option("study", "paper") != protocol.study:
        return None
    return ServeSettings.from_protocol(protocol, size)


MAX_SEED = 2**63
"""Seeds are below this: they key 64-bit generators and sampling hashes."""
MAX_SEEDS = 1_000_000
"""Most seeds one cell may name (a typo like ``0:9999999999999`` would build a range in memory)."""


def parse_seeds(text: str) -> tuple[int, ...]:
    """``A:B`` -> seeds A .. B-1 (a single ``A`` is one seed)."""
    start, sep, stop = text.partition(":")
    try:
        a = int(start)
        b = int(stop) if sep else a + 1
    except ValueError:
        raise ConfigError(f"--seeds:{text}: expected A:B (seeds A to B-1)") from None
    if a < 0 or b <= a:
        raise ConfigError(f"--seeds:{text}: need 0 <= A < B")
    if b > MAX_SEED:
        raise ConfigError(f"--seeds:{text}: seeds must be below 2**63 (they seed 64-bit generators)")
    if b - a > MAX_SEEDS:
        raise ConfigError(f"--seeds:{text}: {b - a} seeds; at most {MAX_SEEDS} in one cell")
    return tuple(range(a, b))


def parse_domains(text: str) -> tuple[str, ...]:
    """``a,b,c`` -> the named domains in order, each once (a repeat would play its episodes twice
    under one key); an empty list is refused rather than read as "every domain"."""
    names = tuple(dict.fromkeys(d.strip() for d in text.split(",") if d.strip()))
    if not names:
        raise ConfigError(f"--domains:{text!r}: names no domain (leave --domains out for every evaluated domain)")
    return names


def parse_buyers(values: list[str]) -> dict[str, str]:
    """``label=SPEC`` or ``SPEC`` (then the label is the spec) per ``--buyer``; a buyer given twice
    is played once, one label given two specs is an error."""
    buyers: dict[str, str] = {}
    for value in values:
        label, sep, spec = value.partition("=")
        if not sep or ":" in label:
            label, spec = value, value
        else:  # an explicit label names records and tables: a name, never a path
            check_name("--buyer", label)
        parse_spec(spec)
        if buyers.get(label) == spec:
            continue  # the same buyer named twice: played once
        if label in buyers:
            raise ConfigError(f"--buyer:{label}: given twice, as {buyers[label]!r} and {spec!r}")
        buyers[label] = spec
    return buyers


def build_cell(protocol: Any, *, arm: str, seller: str, buyers: dict[str, str] | None = None,
               domains: tuple[str, ...] | None = None, seeds: tuple[int, ...] | None = None) -> CellSpec:
    """A cell with the protocol's defaults: all evaluated domains, evaluation seeds and buyers."""
    parse_spec(seller)
    chosen = buyers or {name: b.spec for name, b in protocol.buyers.evaluation.items()}
    known = set(protocol.domains.evaluated)
    names = domains or tuple(protocol.domains.evaluated)
    unknown = [d for d in names if d not in known]
    if unknown:
        raise ConfigError(f"--domains:{','.join(unknown)}: not evaluated by study {protocol.study!r}; "
                          f"known: {', '.join(sorted(known))}")
    return CellSpec(study=protocol.study, arm=arm, seller=seller, buyers=chosen, domains=names,
                    seeds=seeds or tuple(protocol.seeds.evaluation.seeds()),
                    dirichlet_alpha=protocol.environment.dirichlet_alpha)
