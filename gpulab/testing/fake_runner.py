"""A stand-in for `gpulab.runner.client.runner_client.RunnerClient` that runs nothing.

It implements the client's surface (start, wait_ready, submit, cancel, shutdown, Job iteration)
and plays scripted events, so snapshot tests and demos get a frozen, deterministic lab: no
subprocess, no timing noise, no timestamps. Scripts are async callables `(job, emit)`; a job can
be held open (`hold=True`) until `release()` or a cancel, to photograph or cancel a run in flight.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from gpulab.core import events as ev
from gpulab.core.devices import EMULATOR, Backend, Inventory
from gpulab.core.results import Result
from gpulab.exercises.prewarm import EXPERIMENT_ID as PREPARE_ID
from gpulab.experiments.montecarlo import standard_error
from gpulab.experiments.registry import get

Emit = Callable[[dict[str, Any]], None]
Script = Callable[["FakeJob", Emit], Awaitable[None]]

FROZEN_T = 1_700_000_000.0


def cpu_inventory() -> dict[str, Any]:
    """A fixed CPU-mode inventory (what the handshake carries on a machine without a GPU)."""
    inv = Inventory(
        backends={
            "numpy": Backend("numpy", True, "2.0.0"),
            "torch-cpu": Backend("torch-cpu", True, "2.5.0"),
            "torch-cuda": Backend("torch-cuda", False, "", "no NVIDIA driver found"),
            "cupy": Backend("cupy", False, "", "CuPy is not installed"),
            EMULATOR: Backend(EMULATOR, True, "/usr/bin/g++"),
        },
        versions={"numpy": "2.0.0", "torch": "2.5.0"},
        cpu="x86_64",
        cpu_count=8,
        gpu_reason="no NVIDIA driver found",
    )
    return inv.to_dict()


def frozen(event_type: str, job: str, /, **fields: Any) -> dict[str, Any]:
    """An event as `ev.make` builds it, with its time fixed so snapshots do not change run to run."""
    event = ev.make(event_type, job, **fields)
    event["t"] = FROZEN_T
    return event


class FakeJob:
    """A job of the fake runner: the same events, final event and cancel flag as a real `Job`."""

    def __init__(
        self, job_id: str, experiment: str, params: dict[str, Any], device: int | None = None
    ) -> None:
        self.id = job_id
        self.experiment = experiment
        self.params = params
        self.device = device  # what `submit` was asked for (None: the runner's default)
        self.done = False
        self.final: dict[str, Any] | None = None
        self.cancel_requested = asyncio.Event()
        self.released = asyncio.Event()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def _put(self, event: dict[str, Any]) -> None:
        if self.done:
            return
        self._queue.put_nowait(event)
        if event["type"] in ev.FINAL:
            self.done = True
            self.final = event

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            event = await self._queue.get()
            yield event
            if event["type"] in ev.FINAL:
                return

    async def wait(self) -> dict[str, Any]:
        """The final event, once the job has one."""
        while not self.done:
            await asyncio.sleep(0.01)
        assert self.final is not None
        return self.final


async def montecarlo_script(job: FakeJob, emit: Emit, *, hold: bool = False) -> None:
    """Plausible, fixed Monte Carlo events: NumPy and torch-cpu rows, a result, a series."""
    samples = int(job.params["samples"])
    emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
    rows = []
    for i, (cid, label, median) in enumerate(
        (("numpy", "NumPy (CPU)", 0.0125), ("torch-cpu", "PyTorch CPU", 0.0050))
    ):
        emit(frozen(ev.PROGRESS, job.id, fraction=i / 2, message=f"{label}: {samples:,} samples"))
        if hold and i == 1:
            await _hold(job)
            if job.cancel_requested.is_set():
                emit(frozen(ev.CANCELLED, job.id, message="cancelled", how="cooperative"))
                return
        row = {
            "contender": cid,
            "size": f"{samples:g}",
            "dtype": "",
            "time_median_s": median,
            "time_min_s": median * 0.98,
            "time_max_s": median * 1.05,
            "runs": 20,
            "throughput": samples / median / 1e9,
            "unit": "G samples/s",
            "percent_of_peak": None,
            "cold_s": median * 1.5,
            "extra": {"estimate": 3.1416},
        }
        rows.append(row)
        emit(frozen(ev.MEASUREMENT, job.id, row=row))
        emit(frozen(ev.LOG, job.id, line=f"{cid}: 20 runs", stream="gpulab"))
    emit(frozen(ev.PROGRESS, job.id, fraction=1.0, message="done"))
    xs = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]
    exp = get(job.experiment)
    result = {
        "record": {"experiment": job.experiment, "params": job.params, "device": "CPU"},
        "measurements": rows,
        "verdicts": [
            {
                "contender": r["contender"],
                "error": 1e-4,
                "tolerance": 2e-3,
                "passed": True,
                "metric": "|estimate - pi|",
                "size": r["size"],
                "dtype": "",
            }
            for r in rows
        ],
        "series": [
            {
                "name": "expected error",
                "x": xs,
                "y": [standard_error(int(n)) for n in xs],
                "x_label": "samples",
                "y_label": "standard error",
                "log_x": True,
                "log_y": True,
            }
        ],
        "artifacts": [],
        "summary": {
            "samples": samples,
            "samples_run": samples,
            "estimate_by": "torch-cpu",
            "estimate": 3.1416,
            "error": abs(3.1416 - math.pi),
            "standard_error": standard_error(samples),
        },
        "unavailable": {"torch": "needs a GPU: no NVIDIA driver found"},
        "explanation": "Every point is independent, so the work splits across every core.",
        "lesson": exp.lesson,
    }
    result["headline"] = exp.answer(Result.from_dict(result))  # as the worker's finish()
    emit(frozen(ev.RESULT, job.id, result=result))


async def _hold(job: FakeJob) -> None:
    waits = [
        asyncio.ensure_future(job.released.wait()),
        asyncio.ensure_future(job.cancel_requested.wait()),
    ]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for w in waits:
        w.cancel()


class FakeRunner:
    """Same surface as RunnerClient; `script` decides what each job emits."""

    def __init__(
        self,
        *,
        device_index: int = 0,
        env: dict[str, str] | None = None,
        log_path: str | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        inventory: dict[str, Any] | None = None,
        script: Script | None = None,
        hold: bool = False,
        pid: int = 4242,
        calibrated: bool = True,
    ) -> None:
        """`calibrated`: what the handshake says of this device's cached ceilings."""
        self.device_index = device_index
        self.calibrated = calibrated
        self.on_event = on_event
        self.script = script
        self.hold = hold
        self._pid = pid
        self._inventory = inventory or cpu_inventory()
        self._handshake: dict[str, Any] | None = None
        self._ids = itertools.count(1)
        self._ready = asyncio.Event()
        self.jobs: list[FakeJob] = []
        # `exercise-prepare` jobs (the TUI asks for one per opened exercise) are kept apart and
        # answered at once, so a script written for checks never sees them.
        self.preparations: list[FakeJob] = []
        self.shut_down = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Become ready at once with a canned handshake (no worker process)."""
        self._handshake = {
            "protocol": 1,
            "pid": self._pid,
            "inventory": self._inventory,
            "ready_s": 0.5,
            "python": "3.11",
            "calibrated": self.calibrated,
        }
        self._ready.set()

    async def wait_ready(self, timeout: float | None = None) -> dict[str, Any]:
        """The handshake, once `start` has run (TimeoutError past `timeout`)."""
        await asyncio.wait_for(self._ready.wait(), timeout)
        assert self._handshake is not None
        return self._handshake

    @property
    def ready(self) -> bool:
        """Whether `start` has finished."""
        return self._ready.is_set()

    @property
    def handshake(self) -> dict[str, Any] | None:
        """The canned handshake, or None before `start`."""
        return self._handshake

    @property
    def worker_pid(self) -> int | None:
        """The fake worker's PID once started, else None."""
        return self._pid if self._handshake else None

    async def submit(
        self,
        experiment: str,
        params: dict[str, Any] | None = None,
        *,
        device: int | None = None,
        hidden: bool = False,
    ) -> FakeJob:
        """Validate `params` as the real worker does and start the experiment's scripted job
        (hidden ones too: the fake is its own worker)."""
        exp = get(experiment)
        clean = exp.params.validate(params or {})
        job = FakeJob(str(next(self._ids)), experiment, clean, device)

        def emit(event: dict[str, Any]) -> None:
            job._put(event)
            if self.on_event:
                self.on_event(event)

        if experiment == PREPARE_ID:
            self.preparations.append(job)
            emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
            summary = {"exercise": clean["exercise"], "prepared": False, "why": "a fake runner"}
            emit(frozen(ev.RESULT, job.id, result={"summary": summary}))
            return job
        self.jobs.append(job)

        script = self.script
        if script is None:

            async def script(j: FakeJob, e: Emit) -> None:
                await montecarlo_script(j, e, hold=self.hold)

        task = asyncio.ensure_future(script(job, emit))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    def release(self) -> None:
        """Let every held job (hold=True) go on past the step it waits at."""
        for job in self.jobs:
            job.released.set()

    async def cancel(self, job: FakeJob) -> None:
        """Ask `job` to stop; a held job then ends with a cancelled event."""
        job.cancel_requested.set()

    def crash(self) -> None:
        """Play the client's report of a worker that died while idle, then a new worker."""
        self._pid += 1
        if self._handshake is not None:
            self._handshake = {**self._handshake, "pid": self._pid}
        if self.on_event:
            self.on_event(
                frozen(
                    ev.FAILED,
                    "",
                    kind=ev.KIND_CRASHED,
                    message="the worker died (signal 9)",
                    traceback="",
                )
            )

    async def shutdown(self, grace_s: float = 2.0) -> None:
        """Stop every job's task and mark the runner shut down."""
        self.shut_down = True
        for task in list(self._tasks):
            task.cancel()

    async def __aenter__(self) -> FakeRunner:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()
