"""How many pytest-xdist workers `-n auto` starts (tests/conftest.py): the suite runs in two on
a machine without a GPU (CI's 2-core box: 866 s in one process, 554 s in two) and in one process
on a GPU box, where GPU tests time against the device."""

from __future__ import annotations

import os

import conftest


def _workers(monkeypatch, listed, cpus=2, **env):
    for name in ("PYTEST_XDIST_AUTO_NUM_WORKERS", "GPULAB_FORCE_CPU", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def listdir(path):
        if listed is None:
            raise FileNotFoundError(path)
        return listed

    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    return conftest.pytest_xdist_auto_num_workers(None)


def test_two_workers_without_a_gpu_and_one_process_with_one(monkeypatch):
    assert _workers(monkeypatch, None) == 2
    assert _workers(monkeypatch, [], cpus=16) == 2  # the driver, no GPU: still two
    assert _workers(monkeypatch, ["0000:18:00.0"]) == 0
    assert _workers(monkeypatch, None, cpus=1) == 0  # one core: no worker to gain


def test_a_hidden_gpu_is_no_gpu_and_the_variable_decides(monkeypatch):
    assert _workers(monkeypatch, ["0000:18:00.0"], CUDA_VISIBLE_DEVICES="") == 2
    assert _workers(monkeypatch, ["0000:18:00.0"], GPULAB_FORCE_CPU="1") == 2
    assert _workers(monkeypatch, ["0000:18:00.0"], PYTEST_XDIST_AUTO_NUM_WORKERS="3") == 3
