"""The local Ray start of small machines (issue 30: the raylet once died on 2 cores): a private
temp folder, an explicit CPU count, a small object store, no dashboard; and it starts three times
in a row, each instance working and leaving nothing behind."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from negotiation.evaluation import local_ray_options, start_ray, stop_ray


def test_local_options_size_ray_for_a_small_machine(monkeypatch):
    monkeypatch.delenv("RAY_OBJECT_STORE_BYTES", raising=False)
    options = local_ray_options(num_cpus=2, temp_dir="/tmp/ray-x")
    assert options == {"num_cpus": 2, "num_gpus": 0, "object_store_memory": 256 * 1024 ** 2,
                       "include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                       "_temp_dir": "/tmp/ray-x"}
    assert local_ray_options()["num_cpus"] == os.cpu_count()
    monkeypatch.setenv("RAY_OBJECT_STORE_BYTES", str(100 * 1024 ** 2))
    assert local_ray_options(num_gpus=4)["object_store_memory"] == 100 * 1024 ** 2
    assert local_ray_options(num_gpus=4)["num_gpus"] == 4


@pytest.mark.slow
def test_ray_starts_three_times_in_a_row_on_two_cpus(monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_OBJECT_STORE_BYTES", raising=False)
    folders = []
    for attempt in range(3):
        assert start_ray(num_cpus=2) and not start_ray(num_cpus=2)  # a second call joins the first
        try:
            resources = ray.cluster_resources()
            assert resources["CPU"] == 2 and "GPU" not in resources
            assert resources["object_store_memory"] == 256 * 1024 ** 2
            folder = Path(ray._private.worker.global_worker.node.get_temp_dir_path())  # this head's folder
            assert folder.name.startswith("ray-") and folder != Path("/tmp/ray"), folder
            square = ray.remote(lambda x: x * x)
            assert ray.get([square.remote(i) for i in range(8)]) == [i * i for i in range(8)], attempt
        finally:
            stop_ray()
        assert not ray.is_initialized() and not folder.exists()
        folders.append(folder)
    assert len(set(folders)) == 3
