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
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TextIO

from gpulab.core import hostmem
from gpulab.runner import events as ev
from gpulab.runner.protocol import PROTOCOL, ProtocolError, encode, read_frame_async

CANCEL_GRACE_S = 1.0  # a job that ignores a cancel this long gets its worker killed
STDERR_TAIL = 60  # lines of the worker's stderr kept for a crash report (a faulthandler dump fits)
MAX_START_FAILURES = 3  # consecutive workers dying before their hello: stop trying
SPARE_DELAY_S = 0.5  # the worker idles this long before a spare starts (not in `gpulab run`)
NO_STANDBY_ENV = "GPULAB_NO_STANDBY"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

EventCallback = Callable[[dict[str, Any]], None]


class WorkerStartError(RuntimeError):
    """The worker could not be started (it died before its handshake, several times)."""


def describe_exit(returncode: int) -> tuple[str, int | None, str | None]:
    """(one-line description, exit code or None, signal name or None) of a finished process."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            name = sig.name
            desc = signal.strsignal(sig) or name
        except ValueError:
            name, desc = f"signal {-returncode}", f"signal {-returncode}"
        return f"was killed by {name} ({desc.lower()})", None, name
    return f"exited with code {returncode}", returncode, None


class Job:
    """One submitted experiment run and its events, in order."""

    def __init__(self, job_id: str, experiment: str, params: dict[str, Any], device: int) -> None:
        self.id = job_id
        self.experiment = experiment
        self.params = params
        self.device = device
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.final: dict[str, Any] | None = None
        self.submitted_at = time.time()
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        state = self.final["type"] if self.final else "running"
        return f"<Job {self.id} {self.experiment} {state}>"

    def _push(self, event: dict[str, Any]) -> bool:
        if self.done:
            return False
        self.events.append(event)
        if event["type"] in ev.FINAL:
            self.done = True
            self.final = event
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        return True

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        seen = 0
        while True:
            changed = self._changed
            while seen < len(self.events):
                seen += 1
                yield self.events[seen - 1]
            if self.done:
                return
            await changed.wait()

    async def wait(self) -> dict[str, Any]:
        while not self.done:
            await self._changed.wait()
        assert self.final is not None
        return self.final


class _Worker:
    """One worker process and what the client knows about it."""

    def __init__(
        self, proc: asyncio.subprocess.Process, cmd_fd: int, spawned: float, role: str
    ) -> None:
        self.proc = proc
        self.cmd_fd = cmd_fd
        self.spawned = spawned
        self.role = role  # "active" (takes jobs once ready) or "spare" (waits in standby)
        self.promoted: float | None = None  # when a spare was told to become the worker
        self.standby: dict[str, Any] | None = None  # the spare's `standby` message
        self.hello: dict[str, Any] | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self.why_exit = ""  # set when the exit is expected: "killed", "retiring: ...", "shutdown"
        self.exited = False
        self.paused = False  # a spare stopped (SIGSTOP) while a job runs
        self.guarded = False  # the spare said it set PDEATHSIG: stopping it cannot orphan it
        self.supervisor: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict[str, Any]) -> bool:
        """Commands are small, so a blocking write into the pipe returns at once."""
        if self.cmd_fd < 0:
            return False
        try:
            os.write(self.cmd_fd, encode(message))
            return True
        except OSError:  # the worker is gone; its supervisor reports that
            return False

    def close_commands(self) -> None:
        if self.cmd_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.cmd_fd)
            self.cmd_fd = -1

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def signal(self, sig: int) -> None:
        if not self.exited:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)


def standby_wanted(flag: bool, env: dict[str, str]) -> bool:
    """The constructor's flag, unless GPULAB_NO_STANDBY=1 (in the given env or this process's)."""
    off = env.get(NO_STANDBY_ENV, os.environ.get(NO_STANDBY_ENV, ""))
    return flag and off.strip() not in ("1", "true", "yes")


class RunnerClient:
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
        except Exception as exc:  # a broken callback must not break the runner
            self.callback_error = exc

    def _note(self, line: str) -> None:
        self._emit(ev.make(ev.LOG, "", line=line, stream="gpulab"))

    def _write_log(self, stream: str, line: str, job: str) -> None:
        assert self._log is not None
        stamp = time.strftime("%H:%M:%S")
        self._log.write(f"{stamp} {stream:<6} {job or '-':<8} {line}\n")
        self._log.flush()

    # --- replacing a worker -----------------------------------------------------------------------
    def _replace(self, worker: _Worker) -> None:
        """`worker` takes no more jobs: the spare takes its place now, or a fresh worker starts."""
        if worker is not self._worker:
            return
        self._worker = None
        self.handshake = None
        self._notify()
        if self._closed or self._start_error:
            return
        self.restarts += 1
        spare, self._spare = self._spare, None
        if spare is not None and not spare.exited and spare.cmd_fd >= 0:
            spare.role = "active"
            spare.promoted = time.monotonic()
            self._worker = spare
            self._resume(spare)
            # If it died a moment ago, the send fails and its exit counts as a failed start.
            spare.send({"cmd": "activate"})
        else:
            self._spawn_soon("active")

    def _spawn_soon(self, role: str) -> None:
        task = self._task(self._spawn(role))
        self._spawns.add(task)
        task.add_done_callback(self._spawns.discard)

    def _schedule_spare(self) -> None:
        """A spare once the worker has been ready and idle a moment (not during a run's first job)."""
        if not self.standby or self._closed or self._spare is not None or self._spare_timer:
            return
        worker = self._worker
        if worker is None or worker.hello is None or self._current is not None:
            return
        if self._spare_failures >= MAX_START_FAILURES:
            return
        loop = asyncio.get_running_loop()
        self._spare_timer = loop.call_later(SPARE_DELAY_S, self._spare_due)

    def _spare_due(self) -> None:
        self._spare_timer = None
        worker = self._worker
        if self._closed or self._spare is not None or self._current is not None:
            return  # a job's end schedules it again
        if worker is None or worker.hello is None or self._spawns:
            return
        self._spawn_soon("spare")

    def _hold_spare(self) -> None:
        """A spare still importing would take CPU from the job being measured: stop it meanwhile.

        Linux only: there PDEATHSIG (SIGKILL) still ends a stopped spare when this process dies.
        """
        spare = self._spare
        if spare is None or spare.standby is not None or spare.paused or spare.exited:
            return
        if not spare.guarded:  # stopped before its PDEATHSIG, it would outlive our death
            return
        if sys.platform.startswith("linux"):
            spare.signal(signal.SIGSTOP)
            spare.paused = True

    def _resume_spare(self) -> None:
        if self._spare is not None:
            self._resume(self._spare)

    @staticmethod
    def _resume(worker: _Worker) -> None:
        if worker.paused:
            worker.signal(signal.SIGCONT)
            worker.paused = False

    # --- the worker process -----------------------------------------------------------------------
    def _worker_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        # The worker must import this very gpulab, also from a source tree that is not installed.
        path = env.get("PYTHONPATH", "")
        if _PACKAGE_ROOT not in path.split(os.pathsep):
            env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + path if path else "")
        return env

    async def _spawn(self, role: str) -> None:
        loop = asyncio.get_running_loop()
        cmd_r, cmd_w = os.pipe()
        evt_r, evt_w = os.pipe()
        argv = [
            sys.executable,
            "-m",
            "gpulab.runner.worker",
            "--fds",
            f"{cmd_r},{evt_w}",
            "--device",
            str(self.device_index),
            "--parent",
            str(os.getpid()),
        ]
        if role == "spare":
            argv.append("--standby")
        spawned = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(cmd_r, evt_w),
                env=self._worker_env(),
            )
        except OSError as exc:
            for fd in (cmd_w, evt_r):
                os.close(fd)
            message = f"could not start the worker ({sys.executable}): {exc}"
            if role == "spare":
                self._spare_failures = MAX_START_FAILURES
                self._note(f"no standby worker: {message}")
            else:
                self._start_error = message
                self._fail_all_queued()
                self._notify()
            return
        finally:
            os.close(cmd_r)
            os.close(evt_w)
        worker = _Worker(proc, cmd_w, spawned, role)
        reader = asyncio.StreamReader(limit=2**20)
        pipe = os.fdopen(evt_r, "rb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        self._live.add(worker)
        if role == "spare":
            self._spare = worker
            if self._current is not None:
                self._hold_spare()
        else:
            self._worker = worker
        worker.supervisor = self._task(self._supervise(worker, reader))
        if self._closed:  # shut down while we were spawning
            worker.why_exit = "shutdown"
            worker.close_commands()
            worker.kill()

    def _task(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _supervise(self, worker: _Worker, reader: asyncio.StreamReader) -> None:
        proc = worker.proc
        assert proc.stdout is not None and proc.stderr is not None
        pipes = [
            self._task(self._read_frames(worker, reader)),
            self._task(self._read_output(worker, proc.stdout, "stdout")),
            self._task(self._read_output(worker, proc.stderr, "stderr")),
        ]
        try:
            returncode = await proc.wait()
            worker.exited = True
            gave_up = self._on_exit(worker)
            # Frames and crash messages written just before death are still in the pipes: drain
            # them (the replacement is already starting), but do not wait on a grandchild that
            # inherited one.
            _, pending = await asyncio.wait(pipes, timeout=1.0)
            for task in pending:
                task.cancel()
            worker.close_commands()
            self._report_exit(worker, returncode, gave_up)
        finally:
            self._live.discard(worker)

    def _on_exit(self, worker: _Worker) -> bool:
        """Right at the exit: replace the worker now. True when too many failed to start."""
        if worker is self._spare:
            self._spare = None
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

    def _report_exit(self, worker: _Worker, returncode: int, gave_up: bool) -> None:
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
            if not worker.why_exit:
                self._spare_failures += 1
                last = f": {tail[-1]}" if tail else ""
                self._note(f"the standby worker {worker.pid} {how}{last}")
                self._schedule_spare()
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

    async def _read_frames(self, worker: _Worker, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                message = await read_frame_async(reader)
                if message is None:
                    return
                self._on_message(worker, message)
        except ProtocolError as exc:
            self._note(f"protocol error, replacing the worker: {exc}")
            worker.kill()

    async def _read_output(self, worker: _Worker, stream: asyncio.StreamReader, name: str) -> None:
        while True:
            try:
                data = await stream.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # the last line, with no newline
                data = exc.partial
            except asyncio.LimitOverrunError as exc:
                # A raw line longer than the reader's buffer: pass it on in pieces, losing none
                # (readline would drop what it had buffered).
                data = await stream.read(max(1, exc.consumed))
            if not data:
                return
            line = data.decode(errors="replace").rstrip("\r\n")
            if name == "stderr":
                worker.stderr_tail.append(line)
            job = self._current
            if worker is self._running_on and job is not None:
                event = ev.make(ev.LOG, job.id, line=line, stream=name)
                self._deliver(job, event)
            else:
                self._emit(ev.make(ev.LOG, "", line=line, stream=name))

    def _on_message(self, worker: _Worker, message: dict[str, Any]) -> None:
        kind = message.get("msg")
        if kind == "event":
            event = message["event"]
            job = self._current
            if job is not None and worker is self._running_on and event.get("job") == job.id:
                if event["type"] in ev.FINAL:
                    self._current = self._running_on = None
                self._deliver(job, event)
                if job.done:
                    self._job_ended()
            else:
                self._emit(event)
        elif kind == "hello":
            self._on_hello(worker, message)
        elif kind == "guarded":
            worker.guarded = True
            if worker is self._spare and self._current is not None:
                self._hold_spare()
        elif kind == "standby":
            worker.standby = message
            self._spare_failures = 0
            took = time.monotonic() - worker.spawned
            self._note(f"standby worker {worker.pid} imported in {took:.2f} s, waiting")
        elif kind == "retiring":
            reason = message.get("reason", "")
            worker.why_exit = f"retiring: {reason}"
            self._replace(worker)
            self._note(f"replacing the worker: {reason}")

    def _on_hello(self, worker: _Worker, message: dict[str, Any]) -> None:
        if message.get("protocol") != PROTOCOL:
            self._start_error = (
                f"the worker speaks protocol {message.get('protocol')}, this client {PROTOCOL}: "
                "a mixed installation of gpulab"
            )
            worker.why_exit = "shutdown"
            worker.kill()
            self._fail_all_queued()
            self._notify()
            return
        now = time.monotonic()
        # A promoted spare: the wait that mattered began at its promotion, not its spawn.
        ready_s = now - (worker.promoted or worker.spawned)
        worker.hello = {
            "protocol": message["protocol"],
            "pid": message["pid"],
            "inventory": message["inventory"],
            "ready_s": ready_s,
            "python": message.get("python", ""),
            "warm": message.get("warm", {}),
            "device_index": message.get("device_index", self.device_index),
            "from_standby": worker.promoted is not None,
            "cuda_context": message.get("cuda_context"),
            "spawn_to_ready_s": now - worker.spawned,
        }
        self._start_failures = 0
        if worker is self._worker and not self._closed:
            self.handshake = worker.hello
            origin = " (from standby)" if worker.promoted is not None else ""
            self._note(f"worker {worker.pid} ready in {ready_s:.2f} s{origin}")
            self._notify()
            self._job_ended()

    def _start_failed_event(self, job_id: str) -> dict[str, Any]:
        return ev.make(
            ev.FAILED, job_id, kind=ev.KIND_WORKER_START, message=self._start_error, traceback=""
        )

    def _fail_all_queued(self) -> None:
        while self._queue:
            job = self._queue.popleft()
            self._deliver(job, self._start_failed_event(job.id))
