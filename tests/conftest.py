"""Shared test setup. GPU tests carry @pytest.mark.gpu and skip cleanly without a usable GPU."""

from __future__ import annotations

import copy
import functools
import os

import pytest


@functools.cache
def gpu_available() -> bool:
    if os.environ.get("GPULAB_FORCE_CPU"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@functools.cache
def cupy_available() -> bool:
    if not gpu_available():
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any CuPy failure means: no GPU tests with CuPy
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with a CUDA build of torch")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """No test touches the user's real progress database, and no check leaves a warm worker
    behind (tests/test_runner_warm.py turns it on, and stops it)."""
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "gpulab-data"))
    monkeypatch.setenv("GPULAB_WARM_WORKER", "0")


@pytest.fixture(scope="module")
def cpu_inventory():
    """This machine's inventory with the GPU backends switched off: the CPU path anywhere."""
    from gpulab.core.devices import Backend, detect

    inv = copy.deepcopy(detect())
    for name in ("torch-cuda", "cupy"):
        inv.backends[name] = Backend(name, False, reason="switched off for the test")
    inv.devices = [d for d in inv.devices if d.kind != "cuda"]
    inv.gpu_reason = "switched off for the test"
    return inv
