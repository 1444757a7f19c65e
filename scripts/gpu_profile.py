"""The lm study's GPU profile round trip: its DVC stages, run on a GPU machine without DVC, then home.

On the GPU machine (torch, transformers; no DVC, no MLflow; pydantic from the wheels ``scripts/gpu_wheels.sh``
fetches here, then ``pip install --no-index --find-links .whl pydantic`` there):

    python scripts/gpu_profile.py run                      # every device stage not yet run, in order
    python scripts/gpu_profile.py run --stages 'init@*' 'train@lm_m_*'   # a part (fnmatch on names), e.g. per call
    python scripts/gpu_profile.py run --dry                # the commands it would run
    python scripts/gpu_profile.py run --lanes --stages 'init@lm_m' '*@lm_m_*'   # training beside evaluation

``--lanes`` runs the training stages one after another beside each arm's select, pilot and evaluate
as soon as its run is in the ledger (``negotiation.pipeline.run_lanes``); the stages share the
ledger under a lock. Mind the GPU's memory (docs/pipeline.md).

Here, with outputs/lm-gpu and metrics/lm-gpu brought back:

    python scripts/gpu_profile.py commit                   # dvc commit -f of the stages the GPU ran
    dvc --cd pipelines/lm repro gpu/dvc.yaml               # the home stages: track, validate, analyze, report, audit

It only runs the commands of ``pipelines/lm/gpu/dvc.yaml`` and its arm files
``pipelines/lm/gpu/arms/<arm>/dvc.yaml`` (``negotiation.pipeline.run_offline``) and commits what they
wrote (``commit_offline``, by each stage's DVC address); every step of the profile is a stage there.
Stages are named ``scenarios``, ``init@<size>``, ``train@<run>``, ``select@<arm>``, ``pilot@<arm>``,
``evaluate@<arm>`` for ``--stages``, whichever file holds them (docs/pipeline.md, "GPU stages").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's package, without an install on the GPU machine

from negotiation.pipeline import DEVICE_STAGES, RUNTIME_KNOBS, commit_offline, run_lanes, run_offline  # noqa: E402

PIPELINE = Path("pipelines/lm/gpu/dvc.yaml")
GPU_EVAL_CONCURRENCY = 256
"""Episodes in flight per cell on the GPU machine unless ``$NEGO_EVAL_CONCURRENCY`` says otherwise:
the ``hf:`` seller batches them on the device (params.yaml's 16 suits 2 CPU cores and API rate
limits; 256 evaluated the lm_m pilot's 288 episodes in 54 s on an H100). A run-time knob, as
everywhere (``RUNTIME_KNOBS``): not a stage param."""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", type=Path, default=PIPELINE, help="the GPU profile's pipeline file")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the device stages not yet run (no DVC needed)")
    r.add_argument("--stages", nargs="*", default=(), help="only stages matching these patterns (fnmatch)")
    r.add_argument("--dry", action="store_true", help="print the commands (with --lanes: the lanes) only")
    r.add_argument("--lanes", action="store_true", help="training in one lane, each arm's evaluation beside it")
    sub.add_parser("commit", help="dvc commit -f the stages the GPU machine ran (here, with DVC)")
    args = p.parse_args()
    if args.command == "run":
        os.environ.setdefault(RUNTIME_KNOBS["evaluate.concurrency"], str(GPU_EVAL_CONCURRENCY))
        runner = run_lanes if args.lanes else run_offline
        ran = runner(args.pipeline, ROOT, groups=DEVICE_STAGES, patterns=tuple(args.stages), dry=args.dry)
        print(f"{'would run' if args.dry else 'ran'} {len(ran)} stage(s); bring outputs/lm-gpu and metrics/lm-gpu "
              "home, then: python scripts/gpu_profile.py commit", file=sys.stderr)
    else:
        raise SystemExit(commit_offline(args.pipeline, ROOT))


if __name__ == "__main__":
    main()
