"""DVC stage ``evaluate@<arm>``: every paired episode of the arm, then its MLflow evaluation run."""

from negotiation.pipeline import parser, run_evaluate_stage, stage_main, write_json


def evaluate(args):
    metrics = run_evaluate_stage(args.study, args.arm, args.results, concurrency=args.concurrency)
    write_json(args.metrics, metrics)
    return metrics


def main() -> None:
    p = parser(__doc__, "arm", "results", "metrics")
    p.add_argument("--concurrency", type=int, default=None,
                   help="episodes in flight (default: $NEGO_EVAL_CONCURRENCY, else params.yaml evaluate.concurrency)")
    stage_main(p, evaluate)


if __name__ == "__main__":
    main()
