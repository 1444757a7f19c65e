"""DVC stage ``analyze``: metrics, paired seed-cluster bootstrap contrasts, Holm, guards."""

from negotiation.pipeline import parser, run_analyze, stage_main, write_json


def analyze(args):
    summary = run_analyze(args.study, args.results, args.out, seed=args.seed)
    write_json(args.metrics, summary)
    return summary


def main() -> None:
    p = parser(__doc__, "results", "out", "metrics")
    p.add_argument("--seed", type=int, required=True)
    stage_main(p, analyze)


if __name__ == "__main__":
    main()
