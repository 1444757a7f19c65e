"""DVC stage ``init@<size>``: a size's untrained weights (base arm, every run's step 0)."""

from negotiation.pipeline import parser, run_init, stage_main


def main() -> None:
    p = parser(__doc__, "size", "out")
    stage_main(p, lambda a: {"init": str(run_init(a.study, a.size, a.out))})


if __name__ == "__main__":
    main()
