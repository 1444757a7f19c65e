"""DVC stage ``scenarios``: the frozen evaluation and pilot scenario sets of the study."""

from negotiation.pipeline import parser, run_scenarios, stage_main


def main() -> None:
    p = parser(__doc__, "out")
    stage_main(p, lambda a: run_scenarios(a.study, a.out))


if __name__ == "__main__":
    main()
