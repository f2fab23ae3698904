"""The faults that need a real GPU: OOM recovery and the dead context after an illegal address."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_asyncio
from conftest import cupy_available
from test_runner import ENV, START_S, final, pid_alive, run_ok, until
from test_runner_experiments import install, uninstall

from gpulab.core import events as ev
from gpulab.runner.client.runner_client import RunnerClient

pytestmark = [pytest.mark.gpu, pytest.mark.asyncio(loop_scope="module")]
MIB = 2**20


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runner():
    install()
    seen: list[dict[str, Any]] = []
    client = RunnerClient(env=ENV, on_event=seen.append)
    client.seen = seen  # type: ignore[attr-defined]
    await client.start()
    await client.wait_ready(START_S)
    yield client
    await client.shutdown()
    uninstall()


async def test_gpu_worker_prewarms_cuda(runner):
    hs = await runner.wait_ready(START_S)
    assert any(d["kind"] == "cuda" for d in hs["inventory"]["devices"])
    assert hs["inventory"]["backends"]["torch-cuda"]["available"]
    assert hs["warm"]["cuda_init_s"] > 0


async def test_gpu_device_mismatch(runner):
    job = await runner.submit("break-it", {"mode": "device-mismatch"})
    end = await final(job)
    assert end["kind"] == ev.KIND_DEVICE_MISMATCH, end
    assert end["devices"] == ["cuda:0", "cpu"]
    assert "same device" in end["message"]


async def test_gpu_oom_gives_memory_back_and_the_next_job_runs(runner):
    pid = runner.worker_pid
    job = await runner.submit("break-it", {"mode": "oom"})
    end = await final(job)
    assert end["kind"] == ev.KIND_OOM, end
    assert end["requested_bytes"] > end["free_bytes"] > 0
    assert end["held_bytes"] > 0
    readings = [e["reading"] for e in job.events if e["type"] == ev.MEMORY]
    before, after = readings[0], readings[-1]
    assert "error" not in after, after
    assert after["torch_allocated"] == before["torch_allocated"]
    assert after["torch_reserved"] <= before["torch_reserved"]
    assert abs(after["device_free"] - before["device_free"]) < 64 * MIB, (before, after)
    assert runner.worker_pid == pid
    end = await run_ok(runner)
    assert "torch" in {m["contender"] for m in end["result"]["measurements"]}


@pytest.mark.skipif(not cupy_available(), reason="needs CuPy")
async def test_illegal_address_replaces_the_worker_and_the_next_job_runs(runner):
    old = runner.worker_pid
    job = await runner.submit("break-it", {"mode": "illegal-address"})
    end = await final(job)
    assert end["kind"] == ev.KIND_ILLEGAL_ADDRESS, end
    assert "illegal" in end["message"] and "compute-sanitizer" in end["explanation"]
    assert await until(lambda: not pid_alive(old), 5)
    assert any("replacing the worker" in e.get("line", "") for e in runner.seen)
    await runner.wait_ready(START_S)
    assert runner.worker_pid != old
    # no crash was reported for an exit the worker announced
    assert not [e for e in runner.seen if e["type"] == ev.FAILED and e["job"] == ""]
    end = await run_ok(runner)
    assert "torch" in {m["contender"] for m in end["result"]["measurements"]}


def _gpu_utilization() -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(0)).gpu)
    except Exception:  # noqa: BLE001 - no NVML reading: the test goes on without it
        return None


@pytest.mark.skipif(not cupy_available(), reason="needs CuPy")
async def test_runaway_kernel_is_killed_and_the_worker_replaced(runner):
    """A kernel spinning 60 s on the device clock: utilization near 100%, the cooperative cancel
    is not seen, the worker is killed well before the spin would end, and the next job runs."""
    import time

    old = runner.worker_pid
    job = await runner.submit("break-it", {"mode": "runaway-kernel", "spin_s": 60})
    async for event in job:
        if event["type"] == ev.PROGRESS and "spins" in event.get("message", ""):
            break
    await asyncio.sleep(2.0)  # NVML averages utilization over its sample period
    busy = _gpu_utilization()
    assert busy is None or busy >= 90, busy
    t0 = time.monotonic()
    await runner.cancel(job)
    assert job.final["how"] == "killed", job.final
    assert time.monotonic() - t0 < 10
    assert await until(lambda: not pid_alive(old), 5)
    await runner.wait_ready(START_S)
    assert runner.worker_pid != old
    t0 = time.monotonic()
    await run_ok(runner)  # the killed context freed the GPU: no 60 s wait behind the spin
    assert time.monotonic() - t0 < 30


async def test_gpu_spare_holds_no_context_until_promoted(runner):
    """A spare waits without a CUDA context (no GPU memory); promoted, it creates one quickly."""
    hs = await runner.wait_ready(START_S)
    assert hs["cuda_context"] is True
    assert await until(lambda: runner.standby_ready, START_S)
    spare = runner.standby_pid
    assert runner.standby_info["cuda_context"] is False
    job = await runner.submit("break-it", {"mode": "hang-ignoring-cancel"})
    async for event in job:
        if event["type"] == ev.PROGRESS:
            break
    await runner.cancel(job)
    assert job.final["how"] == "killed"
    hs = await runner.wait_ready(START_S)
    assert hs["pid"] == spare and hs["from_standby"] and hs["cuda_context"] is True
    assert hs["ready_s"] < 2.0, hs["ready_s"]
    await run_ok(runner)


async def test_each_jobs_first_reading_starts_from_a_reset_peak(runner):
    """The pre-job reading is taken after the peak reset: it never shows the last job's peak."""
    job = await runner.submit("memory", {"gib": 1.0, "hold_s": 0.0})
    end = await final(job)
    assert end["type"] == ev.RESULT, end
    peaks = [e["reading"].get("torch_peak", 0) for e in job.events if e["type"] == ev.MEMORY]
    assert max(peaks) >= 2**30
    job = await runner.submit("vector-add", {"n": 1000})
    await final(job)
    first = next(e["reading"] for e in job.events if e["type"] == ev.MEMORY)
    assert first["torch_peak"] < 2**30, first
