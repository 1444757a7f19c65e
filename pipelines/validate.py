"""DVC stage ``validate``: great-expectations checks and guards over every arm's episodes."""

from negotiation.pipeline import parser, run_validate, stage_main


def main() -> None:
    p = parser(__doc__, "results")
    stage_main(p, lambda a: run_validate(a.study, a.results))


if __name__ == "__main__":
    main()
