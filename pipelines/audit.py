"""DVC stage ``audit``: protocol compliance of everything the pipeline produced; fails closed."""

from negotiation.errors import NegotiationError
from negotiation.pipeline import parser, run_audit_stage, stage_main


def audit(args):
    if not run_audit_stage(args.study, args.results, args.out):
        raise NegotiationError(f"audit of {args.study.name!r} found uncovered departures; see {args.out} "
                               f"or run `nego audit {args.study.name} --results {args.results}`")
    return {"audit": "passed", "report": args.out}


def main() -> None:
    p = parser(__doc__, "results", "out")
    stage_main(p, audit)


if __name__ == "__main__":
    main()
