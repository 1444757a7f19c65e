"""The one place a Ray instance is started here (the ``ray`` backend, benchmarks/scaleout.py, the tests).

On a small machine (2 cores, shared with other users) Ray's defaults are what break a local start:
every instance on the machine shares ``/tmp/ray`` (its ``session_latest`` link, its logs and socket
names), the CPU count is taken from the host rather than from what the caller means to use, the
object store takes 30% of the memory in ``/dev/shm``, and the dashboard and its agent start
processes nobody here reads. ``start_ray`` therefore starts a head with

- a private temporary folder per start (short, under the system temp dir, removed by ``stop_ray``),
- an explicit ``num_cpus`` (default: this machine's CPUs) and ``num_gpus`` (default: none declared),
- a 256 MiB object store (``RAY_OBJECT_STORE_BYTES`` overrides; episodes are small records),
- no dashboard, no usage-stats report, driver logging at warning level, worker logs kept in the
  session folder rather than streamed to the driver.

With ``$RAY_ADDRESS`` set it joins that cluster instead and sets none of this (the cluster's own
start decided it; docs/scale-out.md).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any

OBJECT_STORE_BYTES = 256 * 1024 ** 2
"""Default object store of a local start: Ray's floor is 75 MiB; shards are kilobytes."""

_started_dirs: list[str] = []
"""Private temp folders of the instances ``start_ray`` started and ``stop_ray`` has not yet removed."""


def local_ray_options(num_cpus: int | None = None, num_gpus: int | None = None,
                      temp_dir: str | None = None) -> dict[str, Any]:
    """The ``ray.init`` keywords of a local head start (see the module doc)."""
    store = int(os.environ.get("RAY_OBJECT_STORE_BYTES") or OBJECT_STORE_BYTES)
    return {"num_cpus": num_cpus or os.cpu_count() or 1, "num_gpus": num_gpus or 0,
            "object_store_memory": store, "include_dashboard": False, "log_to_driver": False,
            "logging_level": logging.WARNING, "_temp_dir": temp_dir}


def start_ray(num_cpus: int | None = None, num_gpus: int | None = None) -> bool:
    """Join ``$RAY_ADDRESS``'s cluster, else start a local head (module doc); True if this call
    started an instance (stop it with ``stop_ray``), False when Ray was already initialized."""
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        return True
    # short: Ray's Unix socket paths (<= 107 bytes) live below it
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    _started_dirs.append(temp_dir)
    try:
        ray.init(**local_ray_options(num_cpus, num_gpus, temp_dir))
    except BaseException:
        stop_ray()
        raise
    return True


def stop_ray() -> None:
    """Shut Ray down here and remove the private folders of the instances ``start_ray`` started."""
    import ray

    ray.shutdown()
    while _started_dirs:
        shutil.rmtree(_started_dirs.pop(), ignore_errors=True)
