"""DVC stage ``train@<run>``: one training run (demo GRPO on the CPU, or NeMo-RL) plus its curves."""

import shutil
from pathlib import Path

from negotiation.pipeline import parser, run_train, stage_main


def train(args):
    summary = run_train(args.study, args.run, Path(args.out))
    # `dvc plots show` reads the curves from their own path (a plot may not sit inside an out).
    Path(args.curves).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(args.out) / "curves.csv", args.curves)
    return summary


def main() -> None:
    p = parser(__doc__, "run", "out", "curves")
    stage_main(p, train)


if __name__ == "__main__":
    main()
