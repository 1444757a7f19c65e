"""DVC stage ``report``: the paper's tables and figures from data, and the transcript viewer."""

from negotiation.pipeline import parser, run_report, stage_main


def main() -> None:
    p = parser(__doc__, "results", "out")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--viewer-episodes", type=int, required=True)
    stage_main(p, lambda a: run_report(a.study, a.results, a.out, seed=a.seed,
                                       viewer_episodes=a.viewer_episodes))


if __name__ == "__main__":
    main()
