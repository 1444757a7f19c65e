"""A demo training step imports neither TorchDynamo (torch.optim's optimizers do) nor pandas."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from pathlib import Path
import torch
from negotiation.pipeline import run_train  # noqa: F401  (what the train@ stage imports)
from negotiation.training._run import RunLedger, write_curves
from negotiation.training._trainer import _State, _grpo_update, _setup  # noqa: F401
from negotiation.training._adamw import PlainAdamW
net = torch.nn.Linear(3, 2)
opt = PlainAdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.999), weight_decay=0.01)
net(torch.ones(4, 3)).sum().backward()
torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
opt.step(); opt.zero_grad(set_to_none=True)
ledger = RunLedger(Path("."), 0, 0, None, None, curves=[{"step": 1, "train/loss": 0.5}], val_scores={0: 0.25})
write_curves(ledger, Path(sys.argv[1]))
print(sorted(m for m in ("torch._dynamo", "pandas") if m in sys.modules))
"""


def test_a_training_step_and_its_curves_import_neither_dynamo_nor_pandas(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "curves.csv").read_text() == "step,train/loss\n1,0.5\n"
