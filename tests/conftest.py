"""Shared test setup. GPU tests carry @pytest.mark.gpu and skip cleanly without a usable GPU."""

from __future__ import annotations

import copy
import functools
import gc
import os

import pytest

# bench/gpu_suite_one.sh: each pytest-xdist worker takes one GPU of GPULAB_TEST_GPUS in turn, set
# here because the conftest is read before anything in the worker starts CUDA
if os.environ.get("GPULAB_TEST_GPUS") and os.environ.get("PYTEST_XDIST_WORKER", "").startswith(
    "gw"
):
    _gpus = os.environ["GPULAB_TEST_GPUS"].split(",")
    os.environ["CUDA_VISIBLE_DEVICES"] = _gpus[
        int(os.environ["PYTEST_XDIST_WORKER"][2:]) % len(_gpus)
    ]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto` (pyproject's addopts): two on a machine without an NVIDIA GPU, none
    (one process, as before) on one with a GPU, where the GPU tests time against the device and
    those marked `alone` need it to themselves (bench/gpu_suite_one.sh spreads them over the
    GPUs instead). Two, not every core: the tests that wait or time hold on a 2-core box with
    one core busy, and CI is such a box (its suite took 866 s of its 900 in one process, 554 s
    in two). PYTEST_XDIST_AUTO_NUM_WORKERS still decides where it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    if _nvidia_gpu_here():
        return 0
    n = min(2, os.cpu_count() or 1)
    return n if n > 1 else 0


def _nvidia_gpu_here() -> bool:
    """Whether the NVIDIA driver lists a GPU this process may use, read without importing
    torch (the controller process never needs it)."""
    if os.environ.get("GPULAB_FORCE_CPU") or os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return False
    try:
        return bool(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return os.path.exists("/dev/nvidia0")


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


def pytest_collection_finish(session):
    # What is alive once collection ends (the imports, the collected items) stays alive: frozen
    # out of later collections, which then scan only what the tests make
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with a CUDA build of torch")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def _cpu_calibration(tmp_path_factory) -> tuple[str, str] | None:
    """This CPU's calibration, measured once a session by the product's own code (a 256 MiB
    copy and NumPy matmuls: 2-9 s on a loaded 2-core box), as (file name, JSON); None on a
    machine with a usable GPU, whose tests keep measuring as before."""
    if gpu_available():
        return None
    from gpulab.core import peaks as pk
    from gpulab.core.devices import detect
    from gpulab.experiments.base import Context

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULAB_DATA_DIR", str(tmp_path_factory.mktemp("cpu-calibration")))
        peaks = pk.load_or_measure(Context(inventory=detect()), cpu=True)
        path = pk.cache_path(peaks.key)
        return path.name, path.read_text()


@pytest.fixture(autouse=True)
def _isolated_data_dir(request, tmp_path, tmp_path_factory, monkeypatch):
    """No test touches the user's real progress database, and no check leaves a warm worker
    behind (tests/test_runner_warm.py turns it on, and stops it).

    The data dir starts with this CPU's calibration in it, as a learner's has after their first
    run: every run and timed check through a real worker would otherwise measure it again, for
    seconds each. That data dir lies outside tmp_path, which some tests read as a folder of
    their own (an exercise catalog, a search for the one JSON file they wrote). A test about the
    first calibration itself is marked `uncalibrated`: it, and every test marked gpu, gets an
    empty data dir in tmp_path, created when something is first written there."""
    node = request.node
    seeded = None
    if not (node.get_closest_marker("uncalibrated") or node.get_closest_marker("gpu")):
        seeded = request.getfixturevalue("_cpu_calibration")
    if seeded is None:
        data = tmp_path / "gpulab-data"
    else:
        data = tmp_path_factory.mktemp("gpulab-data")
        name, text = seeded
        (data / "peaks").mkdir()
        (data / "peaks" / name).write_text(text)
    monkeypatch.setenv("GPULAB_DATA_DIR", str(data))
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
