"""The asyncio client of the worker process: the TUI and `gpulab run` run every experiment here.

    async with RunnerClient(on_event=print) as runner:
        job = await runner.submit("montecarlo", {"samples": 10**7})
        async for event in job:
            ...

`start()` spawns the worker and returns at once; the worker pre-warms (imports torch and CuPy,
creates the CUDA context) in the background and says hello. Jobs run one at a time, in order.
When the worker dies, the job it was running fails with kind `worker-crashed` (the exit code or
signal and the last lines of its stderr) and a new worker starts by itself.

The replacement is quick: once the worker is ready and idle, the client keeps a spare worker
(`--standby`) that has imported everything but holds no CUDA context (no GPU memory). A killed,
crashed or retiring worker is replaced by promoting the spare (it only creates its CUDA context),
and a new spare starts once the new worker is ready and idle. A spare still importing is stopped
(SIGSTOP) while a job runs, so it takes no CPU from a measurement. `standby=False`, or
GPULAB_NO_STANDBY=1 in the environment, turns the spare off (it costs ~0.5-1 GB of host RAM).

Importing this module imports no torch, CuPy or textual.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from gpulab.core import events as ev
from gpulab.core import hostmem
from gpulab.runner.frames import FramesMixin
from gpulab.runner.jobs import Job
from gpulab.runner.spare import NO_STANDBY_ENV, SPARE_DELAY_S, SpareMixin, standby_wanted
from gpulab.runner.spawn import MAX_START_FAILURES, STDERR_TAIL, SpawnMixin, WorkerStartError
from gpulab.runner.spawn import WorkerProcess as _Worker

__all__ = [
    "CANCEL_GRACE_S",
    "MAX_START_FAILURES",
    "NO_STANDBY_ENV",
    "SPARE_DELAY_S",
    "STDERR_TAIL",
    "EventCallback",
    "Job",
    "RunnerClient",
    "WorkerStartError",
    "standby_wanted",
]

CANCEL_GRACE_S = 1.0  # a job that ignores a cancel this long gets its worker killed

EventCallback = Callable[[dict[str, Any]], None]


class RunnerClient(SpawnMixin, FramesMixin, SpareMixin):
    """The public face: lifecycle, the job queue and event delivery. Where the rest lives:
    runner/spawn.py (start and supervise a worker), runner/frames.py (read its pipes),
    runner/spare.py (the standby spare and replacing a worker), runner/jobs.py (Job)."""

    def __init__(
        self,
        *,
        device_index: int = 0,
        env: dict[str, str] | None = None,
        log_path: str | None = None,
        on_event: EventCallback | None = None,
        cancel_grace_s: float = CANCEL_GRACE_S,
        standby: bool = True,
    ) -> None:
        self.device_index = device_index
        self.env = dict(env or {})
        self.log_path = log_path
        self.on_event = on_event
        self.cancel_grace_s = cancel_grace_s
        # A spare worker, imported and waiting, replaces a killed one in a fraction of a second.
        # It costs one more process's host memory (torch imported: ~0.5-1 GB RSS), no GPU memory.
        self.standby = standby_wanted(standby, self.env)
        self.handshake: dict[str, Any] | None = None
        self.restarts = 0  # workers that replaced another one
        self.callback_error: BaseException | None = None
        self._worker: _Worker | None = None  # the worker that takes the next job
        self._spare: _Worker | None = None
        self._running_on: _Worker | None = None  # the worker running the current job
        self._oom_mark: int | None = None  # OOM kills counted when the current job started
        self._live: set[_Worker] = set()  # every process not yet reaped
        self._spawns: set[asyncio.Task[Any]] = set()
        self._spare_timer: asyncio.TimerHandle | None = None
        self._spare_failures = 0
        self._queue: collections.deque[Job] = collections.deque()
        self._current: Job | None = None
        self._started = False
        self._closed = False
        self._start_failures = 0
        self._start_error = ""
        self._jobs = 0
        self._log: TextIO | None = None
        self._changed: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- state ------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.handshake is not None

    @property
    def worker_pid(self) -> int | None:
        return self._worker.pid if self._worker else None

    @property
    def standby_pid(self) -> int | None:
        """The spare worker's pid (None: no spare now, or standby is off)."""
        return self._spare.pid if self._spare else None

    @property
    def standby_ready(self) -> bool:
        """A spare has done its imports and waits: a replacement would take a fraction of a second."""
        return self._spare is not None and self._spare.standby is not None

    @property
    def standby_info(self) -> dict[str, Any] | None:
        """The spare's `standby` message (pid, import timings, cuda_context), once it has one."""
        return self._spare.standby if self._spare else None

    @property
    def busy(self) -> bool:
        return self._current is not None or bool(self._queue)

    @property
    def current(self) -> Job | None:
        return self._current

    def _notify(self) -> None:
        if self._changed is not None:
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    # --- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._changed = asyncio.Event()
        if self.log_path:
            Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        await self._spawn("active")

    async def wait_ready(self, timeout: float | None = None) -> dict[str, Any]:
        if not self._started:
            raise RuntimeError("RunnerClient.start() was not called")

        async def ready() -> dict[str, Any]:
            while True:
                assert self._changed is not None
                changed = self._changed
                if self._start_error:
                    raise WorkerStartError(self._start_error)
                if self._closed:
                    raise RuntimeError("the runner was shut down")
                if self.handshake is not None:
                    return self.handshake
                await changed.wait()

        return await asyncio.wait_for(ready(), timeout)

    async def shutdown(self, grace_s: float = 2.0) -> None:
        """Stop every worker: the active one is asked to leave and gets `grace_s` to do so
        (the app gives it less when the terminal has gone away); then it is killed."""
        if self._closed:
            return
        self._closed = True
        if self._spare_timer is not None:
            self._spare_timer.cancel()
            self._spare_timer = None
        for job in list(self._queue):
            self._deliver(
                job,
                ev.make(ev.CANCELLED, job.id, message="the runner shut down", how="cooperative"),
            )
        self._queue.clear()
        if self._spawns:  # a replacement being spawned right now: let it exist, then stop it
            await asyncio.gather(*self._spawns, return_exceptions=True)
        workers = list(self._live)
        for worker in workers:
            graceful = worker is self._worker and worker.hello is not None and not worker.why_exit
            worker.why_exit = worker.why_exit or "shutdown"
            if graceful:
                worker.send({"cmd": "shutdown"})
            worker.close_commands()  # EOF: the worker leaves even if it missed the command
            if not graceful:  # a spare, or a worker still starting or already on its way out
                worker.kill()
        for worker in workers:
            try:
                await asyncio.wait_for(asyncio.shield(worker.proc.wait()), grace_s)
            except asyncio.TimeoutError:
                worker.kill()
            if worker.supervisor is not None:
                with contextlib.suppress(Exception):
                    await worker.supervisor
        self._spare = None
        for task in list(self._tasks):
            task.cancel()
        self._notify()
        if self._log is not None:
            self._log.close()
            self._log = None

    async def __aenter__(self) -> RunnerClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # --- jobs -------------------------------------------------------------------------------------
    async def submit(
        self, experiment: str, params: dict[str, Any] | None = None, *, device: int | None = None
    ) -> Job:
        """Validate here (ParamError / UnknownExperiment raise now), then queue the job."""
        from gpulab.experiments.registry import get

        exp = get(experiment)
        validated = exp.params.validate(params or {})
        if self._closed:
            raise RuntimeError("the runner was shut down")
        if not self._started:
            await self.start()
        self._jobs += 1
        job = Job(
            f"job-{self._jobs}",
            exp.id,
            validated,
            self.device_index if device is None else int(device),
        )
        if self._start_error:
            self._deliver(job, self._start_failed_event(job.id))
            return job
        self._queue.append(job)
        self._pump()
        return job

    async def cancel(self, job: Job) -> None:
        """Cooperative first; after the grace period the worker is killed and replaced."""
        if job.done:
            return
        if job in self._queue:
            self._queue.remove(job)
            self._deliver(
                job,
                ev.make(
                    ev.CANCELLED, job.id, message="cancelled before it started", how="cooperative"
                ),
            )
            return
        worker = self._running_on
        if job is not self._current or worker is None or worker.exited:
            return  # not started, or its worker just died: the crash report ends the job
        worker.send({"cmd": "cancel", "job": job.id})
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(job.wait(), self.cancel_grace_s)
        if job.done or self._running_on is not worker or self._current is not job:
            return
        worker.why_exit = "killed"
        worker.kill()
        self._replace(worker)
        self._current = self._running_on = None
        self._deliver(
            job,
            ev.make(
                ev.CANCELLED,
                job.id,
                message=f"the job ignored the cancel for {self.cancel_grace_s:g} s, so its worker "
                "was stopped; a new worker is starting",
                how="killed",
                pid=worker.pid,
            ),
        )
        self._job_ended()

    def _pump(self) -> None:
        """Send the next queued job when the worker is ready and idle."""
        worker = self._worker
        if self._current is not None or not self._queue or worker is None:
            return
        if worker.hello is None or worker.why_exit:  # not ready yet, or on its way out
            return
        job = self._queue.popleft()
        self._current, self._running_on = job, worker
        self._oom_mark = hostmem.oom_kills()
        self._hold_spare()
        # If the worker just died, the send fails and its supervisor fails this job.
        worker.send(
            {
                "cmd": "run",
                "job": job.id,
                "experiment": job.experiment,
                "params": job.params,
                "device": job.device,
            }
        )

    def _job_ended(self) -> None:
        self._pump()
        if self._current is None:
            self._resume_spare()
            self._schedule_spare()

    def _deliver(self, job: Job, event: dict[str, Any]) -> None:
        self._emit(event)
        job._push(event)

    def _emit(self, event: dict[str, Any]) -> None:
        if self._log is not None and event["type"] == ev.LOG:
            self._write_log(event.get("stream", ""), event.get("line", ""), event.get("job", ""))
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception as exc:  # noqa: BLE001 - a broken callback must not break the runner
            self.callback_error = exc

    def _note(self, line: str) -> None:
        self._emit(ev.make(ev.LOG, "", line=line, stream="gpulab"))

    def _write_log(self, stream: str, line: str, job: str) -> None:
        assert self._log is not None
        stamp = time.strftime("%H:%M:%S")
        self._log.write(f"{stamp} {stream:<6} {job or '-':<8} {line}\n")
        self._log.flush()

    def _start_failed_event(self, job_id: str) -> dict[str, Any]:
        return ev.make(
            ev.FAILED, job_id, kind=ev.KIND_WORKER_START, message=self._start_error, traceback=""
        )

    def _fail_all_queued(self) -> None:
        while self._queue:
            job = self._queue.popleft()
            self._deliver(job, self._start_failed_event(job.id))
