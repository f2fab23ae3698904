"""The runner end to end on the CPU: a real worker process, real faults, real recovery.

Most tests share one client (a worker costs seconds to start: it imports torch). Deadlines are
bounded polls, never fixed sleeps; the 1 s and 3 s cancel bounds are the runner's contract.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from test_runner_experiments import LONG_LINE, install, uninstall

from gpulab.core import events as ev
from gpulab.core.params import ParamError
from gpulab.experiments.registry import UnknownExperiment
from gpulab.runner.client.jobs import Job
from gpulab.runner.client.runner_client import RunnerClient
from gpulab.runner.client.supervisor import WorkerStartError
from gpulab.runner.protocol import PROTOCOL

pytestmark = pytest.mark.asyncio(loop_scope="module")

TESTS = Path(__file__).resolve().parent
ENV = {
    "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH", "")])),
    "GPULAB_WORKER_PRELOAD": "test_runner_experiments",
}
START_S = 120.0  # a worker imports torch; a loaded 2-core CI box can take a while
RUN_S = 60.0


def pid_alive(pid: int) -> bool:
    """A zombie counts as gone: it holds no memory, only its exit status."""
    status = Path(f"/proc/{pid}/status")
    if status.parent.parent.exists() and sys.platform.startswith("linux"):
        try:
            return "\nState:\tZ" not in status.read_text()
        except (FileNotFoundError, ProcessLookupError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def until(predicate: Any, timeout: float, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(step)
    return bool(predicate())


async def first(job: Job, kind: str, timeout: float = RUN_S) -> dict[str, Any]:
    async def find() -> dict[str, Any]:
        async for event in job:
            if event["type"] == kind:
                return event
        raise AssertionError(f"{job} ended without a {kind} event: {job.final}")

    return await asyncio.wait_for(find(), timeout)


async def final(job: Job, timeout: float = START_S) -> dict[str, Any]:
    return await asyncio.wait_for(job.wait(), timeout)


def check_order(job: Job) -> None:
    types = [e["type"] for e in job.events]
    assert sum(t in ev.FINAL for t in types) == 1, types
    assert types[-1] in ev.FINAL
    assert all(e["job"] == job.id for e in job.events)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runner(tmp_path_factory):
    install()
    seen: list[dict[str, Any]] = []
    log = tmp_path_factory.mktemp("runner") / "worker.log"
    client = RunnerClient(env=ENV, on_event=seen.append, log_path=str(log))
    client.seen = seen  # type: ignore[attr-defined]
    await client.start()
    await client.wait_ready(START_S)
    yield client
    await client.shutdown()
    uninstall()


async def run_ok(client: RunnerClient) -> dict[str, Any]:
    job = await client.submit("montecarlo", {"samples": 20_000})
    end = await final(job)
    assert end["type"] == ev.RESULT, end
    return end


async def test_handshake(runner):
    hs = await runner.wait_ready(START_S)
    assert hs["protocol"] == PROTOCOL
    assert hs["pid"] == runner.worker_pid and pid_alive(hs["pid"])
    assert hs["pid"] != os.getpid()
    assert hs["inventory"]["backends"]["numpy"]["available"]
    assert "torch-cpu" in hs["inventory"]["backends"]
    assert hs["ready_s"] > 0 and hs["python"] == sys.version.split()[0]
    assert isinstance(hs["calibrated"], bool)  # False: the app calibrates at warm-up
    assert runner.ready


async def test_start_returns_before_the_worker_is_ready():
    client = RunnerClient(env=ENV)
    t0 = time.perf_counter()
    await client.start()
    took = time.perf_counter() - t0
    try:
        assert client.worker_pid is not None
        assert not client.ready  # importing torch takes far longer than spawning
        assert took < 1.0, took
    finally:
        await client.shutdown()


async def test_events_arrive_in_order(runner):
    before = len(runner.seen)
    job = await runner.submit("montecarlo", {"samples": 20_000})
    end = await final(job)
    assert end["type"] == ev.RESULT
    check_order(job)
    types = [e["type"] for e in job.events]
    assert types[0] == ev.ACCEPTED
    assert ev.PROGRESS in types and ev.MEASUREMENT in types
    assert types[-2] == ev.MEMORY  # the reading at the end comes before the final event
    mem = [e for e in job.events if e["type"] == ev.MEMORY]
    assert all(e["pid"] == runner.worker_pid for e in mem)
    assert "t" in mem[-1]["reading"]
    # on_event saw the same job events, in the same order
    mine = [e for e in runner.seen[before:] if e["job"] == job.id]
    assert mine == job.events
    # a second iteration replays everything
    assert [e async for e in job] == job.events


async def test_memory_readings_at_least_twice_a_second(runner):
    job = await runner.submit("break-it", {"mode": "hang"})
    await first(job, ev.PROGRESS)
    assert await until(lambda: sum(e["type"] == ev.MEMORY for e in job.events) >= 4, 10)
    await runner.cancel(job)
    stamps = [e["reading"]["t"] for e in job.events if e["type"] == ev.MEMORY]
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
    # At least 2 a second means no gap over 0.5 s (a little slack for a loaded CI machine).
    assert gaps[-1] <= 0.6, gaps


async def test_exception_is_reported_and_the_worker_keeps_serving(runner):
    pid = runner.worker_pid
    job = await runner.submit("test-raise", {"value": 7})
    end = await final(job)
    assert end["type"] == ev.FAILED
    assert end["kind"] == ev.KIND_EXCEPTION
    assert end["message"] == "ValueError: bad value 7"
    assert "Traceback" in end["traceback"] and "ValueError" in end["traceback"]
    check_order(job)
    assert runner.worker_pid == pid
    await run_ok(runner)


async def test_device_mismatch_is_classified_and_explained(runner):
    job = await runner.submit("break-it", {"mode": "device-mismatch"})
    end = await final(job)
    assert end["kind"] == ev.KIND_DEVICE_MISMATCH, end
    assert "device" in end["message"]
    assert "RuntimeError" in end["traceback"]
    assert ".to(" in end["explanation"]


async def test_oom_through_the_cap_then_memory_back_and_next_job(runner):
    hs = await runner.wait_ready(START_S)
    if hs["inventory"]["backends"]["torch-cuda"]["available"]:
        pytest.skip("with a GPU, oom fills the GPU: see test_runner_gpu.py")
    pid = runner.worker_pid
    job = await runner.submit("break-it", {"mode": "oom", "cap_mib": 256})
    end = await final(job)
    assert end["kind"] == ev.KIND_OOM, end
    assert end["requested_bytes"] == 128 * 2**20
    assert end["free_bytes"] == 64 * 2**20
    assert "128 MiB" in end["message"] and "64 MiB" in end["message"]
    mem = [e["reading"]["host_rss"] for e in job.events if e["type"] == ev.MEMORY]
    peak = max(e["fraction"] for e in job.events if e["type"] == ev.PROGRESS)
    assert peak == 0.75  # it really held 192 MiB of the 256 MiB cap
    assert mem[-1] - mem[0] < 48 * 2**20, (mem[0], mem[-1])  # what it held went back
    assert runner.worker_pid == pid
    await run_ok(runner)


async def test_prints_never_break_the_protocol(runner):
    pid = runner.worker_pid
    job = await runner.submit("test-noisy", {"lines": 5})
    end = await final(job)
    assert end["type"] == ev.RESULT, end
    assert end["result"]["summary"] == {"printed": 5}
    lines = [e for e in runner.seen if e["type"] == ev.LOG]
    text = [e["line"] for e in lines]
    assert [f"plain print {i}" for i in range(5)] == [t for t in text if t.startswith("plain")]
    assert "python stderr line" in text
    assert any(len(t) == LONG_LINE for t in text)
    assert "a partial line at the end" in text
    stdout = {e["line"] for e in lines if e["stream"] == "stdout"}
    assert any(t.endswith("<- not a frame") for t in stdout)
    assert await until(
        lambda: any("raw bytes on fd 2" in e.get("line", "") for e in runner.seen), 5
    )
    assert await until(
        lambda: any("raw bytes on fd 1" in e.get("line", "") for e in runner.seen), 5
    )

    def raw_long_line() -> int:  # it may come in pieces; no byte of it is lost
        return sum(len(e["line"]) for e in runner.seen if set(e.get("line", "")) == {"y"})

    assert await until(lambda: raw_long_line() == LONG_LINE, 5), raw_long_line()
    assert runner.worker_pid == pid
    await run_ok(runner)


@pytest.mark.parametrize("how,sig", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
async def test_crash_is_reported_and_a_new_worker_runs_the_next_job(runner, how, sig):
    await runner.wait_ready(START_S)
    old = runner.worker_pid
    job = await runner.submit("break-it", {"mode": "crash", "crash_with": how})
    queued = await runner.submit("montecarlo", {"samples": 20_000})
    end = await final(job)
    assert end["type"] == ev.FAILED and end["kind"] == ev.KIND_CRASHED, end
    assert end["signal"] == sig and end["exit_code"] is None
    assert sig in end["message"]
    assert end["stderr_tail"] and "Fatal Python error" in "\n".join(end["stderr_tail"])
    logs = [e for e in job.events if e["type"] == ev.LOG]
    assert "Python cannot catch" in logs[0]["line"]  # the explanation came before the crash
    check_order(job)
    assert await until(lambda: not pid_alive(old), 5)
    assert (await final(queued))["type"] == ev.RESULT  # the job queued behind it still runs
    assert runner.worker_pid not in (None, old)


async def test_a_sigkill_after_an_oom_kill_says_probably_out_of_memory(runner, monkeypatch):
    """The kernel's OOM killer seen from outside: a SIGKILL mid-job while the OOM-kill count
    grows (a container's memory limit; the counters are faked, the kill is real)."""
    from gpulab.core import hostmem

    counts = iter(range(10, 10_000))
    box = hostmem.Level(Path("/sys/fs/cgroup/box"), 2, 2 * 2**30, 2**30, 0, 2 * 2**30)
    monkeypatch.setattr(hostmem, "oom_kills", lambda root=hostmem.ROOT: next(counts))
    monkeypatch.setattr(hostmem, "cgroup_levels", lambda root=hostmem.ROOT: [box])
    await runner.wait_ready(START_S)
    job = await runner.submit("break-it", {"mode": "hang"})
    await first(job, ev.PROGRESS)
    os.kill(runner.worker_pid, signal.SIGKILL)
    end = await final(job)
    assert end["kind"] == ev.KIND_CRASHED and end["signal"] == "SIGKILL", end
    assert end["probably_oom"] and "probably out of memory" in end["message"]
    assert "memory limit here is 2.00 GiB" in end["message"]
    await run_ok(runner)


async def test_a_retiring_worker_takes_no_queued_job(runner):
    """After an illegal address the worker retires; the job queued behind runs on its successor."""
    await runner.wait_ready(START_S)
    old, before = runner.worker_pid, len(runner.seen)
    job = await runner.submit("test-illegal-address")
    queued = await runner.submit("montecarlo", {"samples": 20_000})
    end = await final(job)
    assert end["kind"] == ev.KIND_ILLEGAL_ADDRESS, end
    assert (await final(queued))["type"] == ev.RESULT, queued.final
    assert {e["pid"] for e in queued.events if e["type"] == ev.MEMORY} == {runner.worker_pid}
    assert runner.worker_pid != old
    assert await until(lambda: not pid_alive(old), 5)
    assert any("replacing the worker" in e.get("line", "") for e in runner.seen[before:])
    assert not [e for e in runner.seen[before:] if e["type"] == ev.FAILED and e["job"] == ""]


async def test_a_result_that_asks_the_worker_to_retire_is_delivered_then_the_worker_goes(runner):
    """A check whose learner's file left a thread running passes its result on, and the next job
    runs on a new worker: nothing of that file's is left to serve the next one."""
    await runner.wait_ready(START_S)
    old = runner.worker_pid
    job = await runner.submit("test-leaves-a-thread")
    queued = await runner.submit("montecarlo", {"samples": 20_000})
    end = await final(job)
    assert end["type"] == ev.RESULT, end
    assert end["result"]["summary"]["retire_worker"] == "the job left a thread running"
    assert (await final(queued))["type"] == ev.RESULT, queued.final
    assert runner.worker_pid != old
    assert await until(lambda: not pid_alive(old), 5)


async def test_hang_cancelled_cooperatively_within_a_second(runner):
    await runner.wait_ready(START_S)
    pid = runner.worker_pid
    job = await runner.submit("break-it", {"mode": "hang"})
    await first(job, ev.PROGRESS)
    t0 = time.perf_counter()
    await runner.cancel(job)
    took = time.perf_counter() - t0
    assert job.final["type"] == ev.CANCELLED and job.final["how"] == "cooperative"
    assert took <= 1.0, took
    assert not runner.busy and runner.worker_pid == pid


async def test_hang_ignoring_cancel_is_killed_and_the_runner_ready_again_within_3_s(runner):
    """The 3 s bound covers the 1 s grace, the kill and the spare's promotion to a ready worker."""
    await runner.wait_ready(START_S)
    assert await until(lambda: runner.standby_ready, START_S)  # the spare has done its imports
    old, spare = runner.worker_pid, runner.standby_pid
    assert spare not in (None, old) and pid_alive(spare)
    assert runner.standby_info["cuda_context"] in (None, False)  # it holds no GPU memory
    job = await runner.submit("break-it", {"mode": "hang-ignoring-cancel"})
    await first(job, ev.PROGRESS)
    deadline = time.monotonic() + 3.0
    await runner.cancel(job)
    assert job.final["type"] == ev.CANCELLED and job.final["how"] == "killed"
    assert not runner.busy
    assert not runner.ready  # the dying worker takes no job: the next one waits for its successor
    after = await runner.submit("montecarlo", {"samples": 20_000})
    try:
        accepted = await first(after, ev.ACCEPTED, max(0.01, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        pytest.fail(f"not ready again within 3 s of cancel(): {runner.handshake}")
    assert time.monotonic() <= deadline
    hs = runner.handshake
    assert hs is not None and hs["pid"] == spare == runner.worker_pid
    assert hs["from_standby"] and hs["ready_s"] < 3.0
    assert accepted["job"] == after.id
    assert await until(lambda: not pid_alive(old), 2)
    check_order(job)
    assert (await final(after))["type"] == ev.RESULT
    assert [e["pid"] for e in after.events if e["type"] == ev.MEMORY][0] == spare


async def test_cancel_a_queued_job(runner):
    await runner.wait_ready(START_S)
    running = await runner.submit("break-it", {"mode": "hang"})
    queued = await runner.submit("montecarlo", {"samples": 20_000})
    await runner.cancel(queued)
    assert queued.final["type"] == ev.CANCELLED
    assert [e["type"] for e in queued.events] == [ev.CANCELLED]  # it never reached the worker
    await runner.cancel(running)
    assert running.final["how"] == "cooperative"


async def test_params_are_validated_before_the_worker_sees_them(runner):
    before = len(runner.seen)
    with pytest.raises(ParamError, match="mode"):
        await runner.submit("break-it", {"mode": "explode"})
    with pytest.raises(ParamError, match="cap_mib"):
        await runner.submit("break-it", {"mode": "oom", "cap_mib": 1})
    with pytest.raises(UnknownExperiment):
        await runner.submit("no-such-experiment")
    assert not runner.busy and runner.current is None
    await asyncio.sleep(0)
    assert not [e for e in runner.seen[before:] if e["type"] != ev.MEMORY]


async def test_idle_worker_death_is_reported_and_replaced(runner):
    await runner.wait_ready(START_S)
    old = runner.worker_pid
    before = len(runner.seen)
    os.kill(old, signal.SIGKILL)

    def reported() -> list[dict[str, Any]]:
        return [e for e in runner.seen[before:] if e["type"] == ev.FAILED and e["job"] == ""]

    assert await until(lambda: bool(reported()), 5)
    assert reported()[0]["kind"] == ev.KIND_CRASHED and reported()[0]["signal"] == "SIGKILL"
    await runner.wait_ready(START_S)
    assert runner.worker_pid != old
    await run_ok(runner)


async def test_without_a_spare_a_fresh_worker_replaces_a_dead_one(runner):
    """The spare's own death is only logged; with standby off, a replacement starts cold."""
    await runner.wait_ready(START_S)
    assert await until(lambda: runner.standby_pid is not None, START_S)
    runner.standby = False
    try:
        spare, before = runner.standby_pid, len(runner.seen)
        os.kill(spare, signal.SIGKILL)
        assert await until(lambda: runner.standby_pid is None, 5)
        assert await until(
            lambda: any(f"standby worker {spare}" in e.get("line", "") for e in runner.seen), 5
        )
        old = runner.worker_pid
        os.kill(old, signal.SIGKILL)
        assert await until(lambda: runner.worker_pid not in (None, old), 5)
        hs = await runner.wait_ready(START_S)
        assert not hs["from_standby"] and hs["pid"] != spare
        await run_ok(runner)
        assert runner.standby_pid is None
        failures = [e for e in runner.seen[before:] if e["type"] == ev.FAILED and e["job"] == ""]
        assert [e["pid"] for e in failures] == [old]  # the spare's death is no failure
    finally:
        runner.standby = True
        runner._spares.schedule()


async def test_standby_can_be_turned_off(monkeypatch):
    monkeypatch.delenv("GPULAB_NO_STANDBY", raising=False)
    assert RunnerClient().standby
    assert not RunnerClient(standby=False).standby
    assert not RunnerClient(env={"GPULAB_NO_STANDBY": "1"}).standby
    monkeypatch.setenv("GPULAB_NO_STANDBY", "1")
    assert not RunnerClient().standby


async def test_shutdown_is_idempotent_and_leaves_no_process():
    client = RunnerClient(env=ENV)
    await client.start()
    await client.wait_ready(START_S)
    pid = client.worker_pid
    assert await until(lambda: client.standby_pid is not None, START_S)
    spare = client.standby_pid
    job = await client.submit("break-it", {"mode": "hang"})  # stops the spare if still importing
    await first(job, ev.PROGRESS)
    await client.shutdown()
    await client.shutdown()
    assert job.done and job.final["type"] == ev.CANCELLED
    assert await until(lambda: not pid_alive(pid) and not pid_alive(spare), 2)
    assert client.standby_pid is None
    with pytest.raises(RuntimeError):
        await client.submit("montecarlo")


async def test_a_worker_that_cannot_start_is_reported():
    client = RunnerClient(env={"GPULAB_WORKER_PRELOAD": "no_such_module_for_gpulab"})
    await client.start()
    with pytest.raises(WorkerStartError, match="no_such_module_for_gpulab"):
        await client.wait_ready(START_S)
    job = await client.submit("montecarlo")
    assert job.final["kind"] == ev.KIND_WORKER_START
    await client.shutdown()
