"""DVC stage ``select@<arm>``: the step-matched read point (trained arms) and the arm's seller.

(Not ``select.py``: a script folder is first on ``sys.path``, and that name shadows the stdlib.)
"""

from negotiation.pipeline import parser, run_select, stage_main


def main() -> None:
    p = parser(__doc__, "arm", "results")
    stage_main(p, lambda a: run_select(a.study, a.arm, a.results))


if __name__ == "__main__":
    main()
