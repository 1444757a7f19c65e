"""The token trainer's learning ladder (issue 27): run one task of ``protocol/<study>/learning.yaml``
end to end and judge it (``run_learning_task``). The task configs and verdicts are
``negotiation.training.lm``'s (``task_train_config``, ``task_verdict``). See docs/training.md.
"""

from negotiation.learning._run import run_learning_task

__all__ = ["run_learning_task"]
