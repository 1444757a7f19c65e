"""DVC stage ``track``: one MLflow evaluation run per evaluated arm (metrics, tables, pilot)."""

from negotiation.pipeline import parser, run_track, stage_main, write_json


def track(args):
    runs = run_track(args.study, args.results)
    write_json(args.out, runs)
    return runs


def main() -> None:
    p = parser(__doc__, "results", "out")
    stage_main(p, track)


if __name__ == "__main__":
    main()
