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
from gpulab.core.processes import describe_exit
from gpulab.experiments.registry import get
from gpulab.runner.client.frames import FrameReader
from gpulab.runner.client.jobs import Job
from gpulab.runner.client.spare import SparePool, standby_wanted
from gpulab.runner.client.supervisor import (
    MAX_START_FAILURES,
    WorkerProcess,
    WorkerStartError,
    WorkerSupervisor,
)

CANCEL_GRACE_S = 1.0  # a job that ignores a cancel this long gets its worker killed

EventCallback = Callable[[dict[str, Any]], None]


class RunnerClient:
    """The public face: lifecycle, the job queue, event delivery, and which worker is active.

    It owns three collaborators, each built here with what it needs: a `WorkerSupervisor`
    (supervisor.py: starts and reaps worker processes), a `FrameReader` (frames.py:
    reads a worker's pipes) and a `SparePool` (spare.py: the standby spare). They report
    back through the callbacks below (`_on_*`); a `Job` lives in jobs.py."""

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
        self.handshake: dict[str, Any] | None = None
        self.restarts = 0  # workers that replaced another one
        self.callback_error: BaseException | None = None
        self._worker: WorkerProcess | None = None  # the worker that takes the next job
        self._running_on: WorkerProcess | None = None  # the worker running the current job
        self._oom_mark: int | None = None  # OOM kills counted when the current job started
        self._queue: collections.deque[Job] = collections.deque()
        self._current: Job | None = None
        self._started = False
        self._closed = False
        self._start_failures = 0
        self._start_error = ""
        self._jobs = 0
        self._log: TextIO | None = None
        self._changed: asyncio.Event | None = None
        self._reader = FrameReader(
            device_index=device_index,
            note=self._note,
            on_event=self._on_worker_event,
            on_line=self._on_line,
            on_hello=self._on_hello,
            on_refused=self._on_refused,
            on_guarded=self._on_guarded,
            on_standby=self._on_standby,
            on_retiring=self._on_retiring,
        )
        self._supervisor = WorkerSupervisor(
            device_index=device_index,
            env=self.env,
            reader=self._reader,
            on_spawned=self._on_spawned,
            on_spawn_failed=self._on_spawn_failed,
            on_exit=self._on_exit,
            on_reaped=self._on_reaped,
        )
        # A spare worker, imported and waiting, replaces a killed one in a fraction of a second.
        # It costs one more process's host memory (torch imported: ~0.5-1 GB RSS), no GPU memory.
        self._spares = SparePool(
            standby=standby_wanted(standby, self.env),
            spawn_spare=lambda: self._supervisor.spawn_soon("spare"),
            idle=self._idle,
            spawning=lambda: self._supervisor.spawning,
            note=self._note,
        )

    # --- state ------------------------------------------------------------------------------------
    @property
    def standby(self) -> bool:
        """Whether a spare is kept (the constructor's flag and GPULAB_NO_STANDBY); settable."""
        return self._spares.standby

    @standby.setter
    def standby(self, on: bool) -> None:
        self._spares.standby = on

    @property
    def ready(self) -> bool:
        """Whether a worker has said hello."""
        return self.handshake is not None

    @property
    def worker_pid(self) -> int | None:
        """The worker's pid, or None when none runs."""
        return self._worker.pid if self._worker else None

    @property
    def standby_pid(self) -> int | None:
        """The spare worker's pid (None: no spare now, or standby is off)."""
        spare = self._spares.spare
        return spare.pid if spare else None

    @property
    def standby_ready(self) -> bool:
        """A spare has done its imports and waits: a replacement would take a fraction of a second."""
        spare = self._spares.spare
        return spare is not None and spare.standby is not None

    @property
    def standby_info(self) -> dict[str, Any] | None:
        """The spare's `standby` message (pid, import timings, cuda_context), once it has one."""
        spare = self._spares.spare
        return spare.standby if spare else None

    @property
    def busy(self) -> bool:
        """Whether a job runs or waits."""
        return self._current is not None or bool(self._queue)

    @property
    def current(self) -> Job | None:
        """The job running now, or None."""
        return self._current

    def _notify(self) -> None:
        if self._changed is not None:
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    # --- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        """Spawn the worker; its hello comes later (`wait_ready`)."""
        if self._started:
            return
        self._started = True
        self._changed = asyncio.Event()
        if self.log_path:
            Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        await self._supervisor.spawn("active")

    async def wait_ready(self, timeout: float | None = None) -> dict[str, Any]:
        """The worker's handshake once it says hello; the start-up failure or TimeoutError
        otherwise."""
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
        self._spares.close()
        for job in list(self._queue):
            self._deliver(
                job,
                ev.make(ev.CANCELLED, job.id, message="the runner shut down", how="cooperative"),
            )
        self._queue.clear()
        await self._supervisor.stop_all(self._worker, grace_s)
        self._spares.clear()
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
        self,
        experiment: str,
        params: dict[str, Any] | None = None,
        *,
        device: int | None = None,
        hidden: bool = False,
    ) -> Job:
        """Validate here (ParamError / UnknownExperiment raise now), then queue the job. A hidden
        job (a check, an exercise's preparation) is registered by the worker, which validates
        it: this process need not import the grader to ask for one."""
        if hidden:
            experiment_id, validated = experiment, dict(params or {})
        else:
            exp = get(experiment)
            experiment_id, validated = exp.id, exp.params.validate(params or {})
        if self._closed:
            raise RuntimeError("the runner was shut down")
        if not self._started:
            await self.start()
        self._jobs += 1
        job = Job(
            f"job-{self._jobs}",
            experiment_id,
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
        self._spares.hold()
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
            self._spares.resume()
            self._spares.schedule()

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

    def _idle(self) -> bool:
        """The active worker is ready and runs no job, and the runner is open."""
        worker = self._worker
        return (
            not self._closed
            and worker is not None
            and worker.hello is not None
            and self._current is None
        )

    # --- replacing the active worker --------------------------------------------------------------
    def _replace(self, worker: WorkerProcess) -> None:
        """`worker` takes no more jobs: the spare takes its place now, or a fresh worker starts."""
        if worker is not self._worker:
            return
        self._worker = None
        self.handshake = None
        self._notify()
        if self._closed or self._start_error:
            return
        self.restarts += 1
        spare = self._spares.take()
        if spare is not None:
            self._worker = spare
            # If it died a moment ago, the send fails and its exit counts as a failed start.
            spare.send({"cmd": "activate"})
        else:
            self._supervisor.spawn_soon("active")

    # --- what the supervisor reports --------------------------------------------------------------
    def _on_spawned(self, worker: WorkerProcess) -> None:
        if worker.role == "spare":
            self._spares.adopt(worker, busy=self._current is not None)
        else:
            self._worker = worker

    def _on_spawn_failed(self, role: str, message: str) -> None:
        if role == "spare":
            self._spares.failed_to_start(message)
        else:
            self._start_error = message
            self._fail_all_queued()
            self._notify()

    def _on_exit(self, worker: WorkerProcess) -> bool:
        """Right at the exit: replace the worker now. True when too many failed to start."""
        if self._spares.forget(worker):
            return False
        if worker is not self._worker:
            return False  # replaced already (killed, retiring) or never active
        if worker.hello is None and not self._closed:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                self._worker = None
                self.handshake = None
                return True
        self._replace(worker)
        return False

    def _on_reaped(self, worker: WorkerProcess, returncode: int, gave_up: bool) -> None:
        job = self._current if worker is self._running_on else None
        if job is not None:
            self._current = self._running_on = None
        how, code, sig = describe_exit(returncode)
        tail = list(worker.stderr_tail)
        details = {
            "exit_code": code,
            "signal": sig,
            "pid": worker.pid,
            "stderr_tail": tail,
            "traceback": "\n".join(tail),
        }
        if self._closed:
            if job is not None and not job.done:
                self._deliver(
                    job, ev.make(ev.CANCELLED, job.id, message="the runner shut down", how="killed")
                )
            return
        if job is not None and not job.done:
            # The kernel's OOM killer sends SIGKILL: a container's limit ends a run this way.
            hint = hostmem.oom_hint(self._oom_mark) if sig == "SIGKILL" else None
            why = f": probably out of memory ({hint})" if hint else ""
            if hint:
                details["probably_oom"] = True
            message = (
                f"the worker process {how} while running {job.experiment}{why};"
                " a new worker is starting"
            )
            self._deliver(
                job, ev.make(ev.FAILED, job.id, kind=ev.KIND_CRASHED, message=message, **details)
            )
            self._job_ended()
        elif worker.role == "spare":
            self._spares.died(worker, how, tail)
        elif worker.why_exit.startswith("retiring") or worker.why_exit == "killed":
            pass  # expected; the job it ran has its final event already
        elif worker.hello is None:
            message = f"the worker {how} before it was ready"
            if tail:
                message += f": {tail[-1]}"
            if gave_up:
                self._start_error = message
                self._emit(
                    ev.make(ev.FAILED, "", kind=ev.KIND_WORKER_START, message=message, **details)
                )
                self._fail_all_queued()
                self._notify()
                return
            self._emit(ev.make(ev.FAILED, "", kind=ev.KIND_CRASHED, message=message, **details))
        else:
            self._emit(
                ev.make(
                    ev.FAILED,
                    "",
                    kind=ev.KIND_CRASHED,
                    message=f"the idle worker {how}; a new worker is starting",
                    **details,
                )
            )

    # --- what the frame reader reports ------------------------------------------------------------
    def _on_worker_event(self, worker: WorkerProcess, event: dict[str, Any]) -> None:
        job = self._current
        if job is not None and worker is self._running_on and event.get("job") == job.id:
            if event["type"] in ev.FINAL:
                self._current = self._running_on = None
            self._deliver(job, event)
            if job.done:
                self._job_ended()
        else:
            self._emit(event)

    def _on_line(self, worker: WorkerProcess, stream: str, line: str) -> None:
        job = self._current
        if worker is self._running_on and job is not None:
            self._deliver(job, ev.make(ev.LOG, job.id, line=line, stream=stream))
        else:
            self._emit(ev.make(ev.LOG, "", line=line, stream=stream))

    def _on_hello(self, worker: WorkerProcess) -> None:
        self._start_failures = 0
        if worker is self._worker and not self._closed:
            assert worker.hello is not None
            self.handshake = worker.hello
            origin = " (from standby)" if worker.promoted is not None else ""
            self._note(f"worker {worker.pid} ready in {worker.hello['ready_s']:.2f} s{origin}")
            self._notify()
            self._job_ended()

    def _on_refused(self, worker: WorkerProcess, message: str) -> None:
        self._start_error = message
        worker.why_exit = "shutdown"
        worker.kill()
        self._fail_all_queued()
        self._notify()

    def _on_guarded(self, worker: WorkerProcess) -> None:
        if worker is self._spares.spare and self._current is not None:
            self._spares.hold()

    def _on_standby(self, worker: WorkerProcess) -> None:
        self._spares.ready()

    def _on_retiring(self, worker: WorkerProcess, reason: str) -> None:
        worker.why_exit = f"retiring: {reason}"
        self._replace(worker)
        self._note(f"replacing the worker: {reason}")
