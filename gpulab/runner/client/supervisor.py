"""Starting worker processes and supervising each until it exits (the runner client's side).

`WorkerSupervisor` starts workers (each a `WorkerProcess`, handle.py), hands each
one's pipes to a `FrameReader`, waits on it and, once it has exited and its pipes are drained,
tells its owner (the `RunnerClient`) through the callbacks it was given; the owner decides what
the exit means for the job it ran and which worker replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from gpulab.runner.client.frames import FrameReader
from gpulab.runner.client.handle import STDERR_TAIL, WorkerProcess

MAX_START_FAILURES = 3  # consecutive workers dying before their hello: stop trying

__all__ = [
    "MAX_START_FAILURES",
    "STDERR_TAIL",
    "WorkerProcess",
    "WorkerStartError",
    "WorkerSupervisor",
]

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


class WorkerStartError(RuntimeError):
    """The worker could not be started (it died before its handshake, several times)."""


class WorkerSupervisor:
    """Starts workers (`spawn`, `spawn_soon`), supervises each until it is reaped, stops them all.

    Owns every process not yet reaped (`live`), the tasks reading their pipes, and the spawns in
    flight. What an exit means is the owner's: `on_spawned(worker)` once a worker exists,
    `on_spawn_failed(role, message)` when none could be started, `on_exit(worker)` right at an
    exit (returning True when the client gives up starting workers), `on_reaped(worker,
    returncode, gave_up)` once the pipes are drained.
    """

    def __init__(
        self,
        *,
        device_index: int,
        env: dict[str, str],
        reader: FrameReader,
        on_spawned: Callable[[WorkerProcess], None],
        on_spawn_failed: Callable[[str, str], None],
        on_exit: Callable[[WorkerProcess], bool],
        on_reaped: Callable[[WorkerProcess, int, bool], None],
    ) -> None:
        self.device_index = device_index
        self.env = env
        self.reader = reader
        self.on_spawned = on_spawned
        self.on_spawn_failed = on_spawn_failed
        self.on_exit = on_exit
        self.on_reaped = on_reaped
        self.live: set[WorkerProcess] = set()  # every process not yet reaped
        self.spawns: set[asyncio.Task[Any]] = set()
        self.closed = False
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def spawning(self) -> bool:
        """Whether a worker is being started."""
        return bool(self.spawns)

    def worker_env(self) -> dict[str, str]:
        """The worker's environment: ours, the client's extras, unbuffered, this gpulab on the
        path."""
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        # The worker must import this very gpulab, also from a source tree that is not installed.
        path = env.get("PYTHONPATH", "")
        if _PACKAGE_ROOT not in path.split(os.pathsep):
            env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + path if path else "")
        return env

    def spawn_soon(self, role: str) -> None:
        """Start a worker for `role` ("active" or "spare") in the background."""
        task = self._task(self.spawn(role))
        self.spawns.add(task)
        task.add_done_callback(self.spawns.discard)

    async def spawn(self, role: str) -> None:
        """Start a worker process for `role` with its pipes, and read its frames and output."""
        loop = asyncio.get_running_loop()
        cmd_r, cmd_w = os.pipe()
        evt_r, evt_w = os.pipe()
        argv = [
            sys.executable,
            "-m",
            "gpulab.runner.worker.serve",
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
                env=self.worker_env(),
            )
        except OSError as exc:
            for fd in (cmd_w, evt_r):
                os.close(fd)
            self.on_spawn_failed(role, f"could not start the worker ({sys.executable}): {exc}")
            return
        finally:
            os.close(cmd_r)
            os.close(evt_w)
        worker = WorkerProcess(proc, cmd_w, spawned, role)
        frames = asyncio.StreamReader(limit=2**20)
        pipe = os.fdopen(evt_r, "rb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(frames), pipe)
        self.live.add(worker)
        self.on_spawned(worker)
        worker.supervisor = self._task(self._supervise(worker, frames))
        if self.closed:  # shut down while we were spawning
            worker.why_exit = "shutdown"
            worker.close_commands()
            worker.kill()

    def _task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _supervise(self, worker: WorkerProcess, frames: asyncio.StreamReader) -> None:
        proc = worker.proc
        assert proc.stdout is not None and proc.stderr is not None
        pipes = [
            self._task(self.reader.read_frames(worker, frames)),
            self._task(self.reader.read_output(worker, proc.stdout, "stdout")),
            self._task(self.reader.read_output(worker, proc.stderr, "stderr")),
        ]
        try:
            returncode = await proc.wait()
            worker.exited = True
            gave_up = self.on_exit(worker)
            # Frames and crash messages written just before death are still in the pipes: drain
            # them (the replacement is already starting), but do not wait on a grandchild that
            # inherited one.
            _, pending = await asyncio.wait(pipes, timeout=1.0)
            for task in pending:
                task.cancel()
            worker.close_commands()
            self.on_reaped(worker, returncode, gave_up)
        finally:
            self.live.discard(worker)

    async def stop_all(self, active: WorkerProcess | None, grace_s: float) -> None:
        """The active worker, ready and not leaving, is asked to leave and gets `grace_s`;
        every other process (a spare, one starting or on its way out) is killed; then the
        pipe readers are cancelled."""
        self.closed = True
        if self.spawns:  # a replacement being spawned right now: let it exist, then stop it
            await asyncio.gather(*self.spawns, return_exceptions=True)
        workers = list(self.live)
        for worker in workers:
            graceful = worker is active and worker.hello is not None and not worker.why_exit
            worker.why_exit = worker.why_exit or "shutdown"
            if graceful:
                worker.send({"cmd": "shutdown"})
            worker.close_commands()  # EOF: the worker leaves even if it missed the command
            if not graceful:
                worker.kill()
        for worker in workers:
            try:
                await asyncio.wait_for(asyncio.shield(worker.proc.wait()), grace_s)
            except asyncio.TimeoutError:
                worker.kill()
            if worker.supervisor is not None:
                with contextlib.suppress(Exception):
                    await worker.supervisor
        for task in list(self._tasks):
            task.cancel()
