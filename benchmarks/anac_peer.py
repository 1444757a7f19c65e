"""A peer's check over a grid: ANAC pairings in our text protocol beside NegMAS's ``SAOMechanism``.

Every (seller, buyer) pair plays every ``--domains`` x ``--seeds`` scenario in both (``peer_check``);
prints one Markdown table row per run (deal, utilities, turns, acceptor, match) and the match rate.
Usage::

    python benchmarks/anac_peer.py [--pairs AgentK:HardHeaded,...] [--domains used_car,job_offer]
                                   [--seeds 0,1] [--levels 2]

``--small`` (CI) plays two pairs on one scenario at ``--levels 2``.
Exit status 1 when any run does not match.
"""

from __future__ import annotations

import argparse
import sys
import time

from negotiation.agents import peer_check

PAIRS = ("AgentK:HardHeaded,HardHeaded:AgentK,AgentK:TimeDependentAgentConceder,"
         "TimeDependentAgentConceder:TimeDependentAgentLinear,TimeDependentAgentBoulware:TimeDependentAgentConceder,"
         "CUHKAgent:TimeDependentAgentConceder,NiceTitForTat:AgentK,AgentK:NiceTitForTat,"
         "Atlas3:TimeDependentAgentLinear,TimeDependentAgentLinear:Atlas3,IAMhaggler:AgentK,"
         "Gahboninho:TimeDependentAgentConceder")


def _utility(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default=PAIRS, help="comma-separated seller:buyer ANAC agent names")
    parser.add_argument("--domains", default="used_car,job_offer,supply_contract")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--levels", type=int, default=2)
    parser.add_argument("--small", action="store_true", help="CI: two pairs, used_car seed 0, levels 2")
    args = parser.parse_args()
    if args.small:
        args.pairs, args.domains, args.seeds, args.levels = ",".join(PAIRS.split(",")[2:4]), "used_car", "0", 2
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    print("| seller | buyer | domain | seed | deal (ours / NegMAS) | seller u | buyer u | turns | accepted by | match |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    matched = total = 0
    start = time.perf_counter()
    for seller, buyer in pairs:
        for domain in args.domains.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                r = peer_check(domain, seed, seller, buyer, levels=args.levels)
                o, n = r.ours, r.negmas
                total, matched = total + 1, matched + r.match
                print(f"| {seller} | {buyer} | {domain} | {seed} | {o.agreement is not None} / {n.agreement is not None} "
                      f"| {_utility(o.seller_utility)} / {_utility(n.seller_utility)} "
                      f"| {_utility(o.buyer_utility)} / {_utility(n.buyer_utility)} | {o.turns} / {n.turns} "
                      f"| {o.accepted_by or '-'} / {n.accepted_by or '-'} | {'yes' if r.match else 'NO'} |", flush=True)
    print(f"\n{matched} of {total} runs match ({time.perf_counter() - start:.0f} s, levels={args.levels})")
    return 0 if matched == total else 1


if __name__ == "__main__":
    sys.exit(main())
