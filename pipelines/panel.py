"""DVC stage ``panel``: every planned seller arm against the study's exploratory buyer panel."""

from negotiation.pipeline import parser, run_panel_stage, stage_main


def main() -> None:
    p = parser(__doc__, "results")
    p.add_argument("--concurrency", type=int, default=None,
                   help="episodes in flight (default: $NEGO_EVAL_CONCURRENCY, else params.yaml evaluate.concurrency)")
    stage_main(p, lambda a: run_panel_stage(a.study, a.results, concurrency=a.concurrency))


if __name__ == "__main__":
    main()
