"""DVC stage ``pilot@<arm>``: the pre-run pilot gate of every (arm, evaluation buyer) cell."""

from negotiation.pipeline import parser, run_pilot_stage, stage_main


def main() -> None:
    p = parser(__doc__, "arm", "results")
    p.add_argument("--concurrency", type=int, default=None,
                   help="episodes in flight (default: $NEGO_EVAL_CONCURRENCY, else params.yaml evaluate.concurrency)")
    stage_main(p, lambda a: run_pilot_stage(a.study, a.arm, a.results, concurrency=a.concurrency).model_dump())


if __name__ == "__main__":
    main()
