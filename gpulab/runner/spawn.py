"""Starting a worker process and supervising it until it exits (runner client, part 1 of 3).

`WorkerProcess` is one worker and what the client knows about it; `SpawnMixin` (mixed into
`RunnerClient`) starts workers, waits on them and reports how each one ended: a job it was running
fails with kind `worker-crashed`, with the exit code or signal and the last lines of its stderr.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from gpulab.core import events as ev
from gpulab.core import hostmem
from gpulab.core.processes import describe_exit
from gpulab.runner.protocol import encode

STDERR_TAIL = 60  # lines of the worker's stderr kept for a crash report (a faulthandler dump fits)
MAX_START_FAILURES = 3  # consecutive workers dying before their hello: stop trying
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class WorkerStartError(RuntimeError):
    """The worker could not be started (it died before its handshake, several times)."""


class WorkerProcess:
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


_Worker = WorkerProcess  # the name the client used before the split


class SpawnMixin:
    """Worker start and supervision; mixed into RunnerClient, whose state it uses."""

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
