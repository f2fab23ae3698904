"""A command's side of the warm worker: find it, start it when it is not there, submit jobs.

    client = warm_client(say=print_to_stderr)   # None: GPULAB_WARM_WORKER=0, or no private folder
    async with Checker(client=client) as checker:
        ...

`RemoteClient` answers `submit()` and `cancel()` as a RunnerClient does (a `Job` whose events
arrive in order), so `gpulab.ex.session.Checker` runs on it unchanged. Each job has a connection
of its own: the job's events come back on it, a cancel goes out on it, and closing it (the
command interrupted) cancels the job. A server that goes away mid-job ends the job as a crashed
worker would, with a message that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from gpulab.core import events as ev
from gpulab.core.errors import GpulabError
from gpulab.runner.client.jobs import Job
from gpulab.runner.protocol import ProtocolError, encode, read_frame_async
from gpulab.runner.warm.place import NotPrivate, Place, idle_seconds, place, wanted

START_TIMEOUT_S = 30.0  # for the server's socket to answer (not for its worker's start)


class WarmWorkerError(GpulabError):
    """The warm worker could not start its worker; str() says why."""


class RemoteClient:
    """submit() and cancel() of a RunnerClient, done by the warm worker behind `where`."""

    def __init__(self, where: Place) -> None:
        self.where = where
        self.handshake: dict[str, Any] | None = None  # the TUI's runner has one; nobody reads it
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._pumps: set[asyncio.Task[None]] = set()

    async def hello(self, device: int = 0) -> dict[str, Any]:
        """The handshake of the warm worker of `device` (its inventory: what runs here), once it
        is ready; WarmWorkerError when it cannot start."""
        reader, writer = await asyncio.open_unix_connection(str(self.where.socket))
        try:
            writer.write(encode({"cmd": "hello", "device": int(device)}))
            await writer.drain()
            answer = await read_frame_async(reader) or {}
        finally:
            writer.close()
        if "hello" not in answer:
            raise WarmWorkerError(answer.get("error") or "the warm worker closed the connection")
        return dict(answer["hello"])

    async def submit(
        self,
        experiment: str,
        params: dict[str, Any] | None = None,
        *,
        device: int | None = None,
        hidden: bool = False,
    ) -> Job:
        """Send a job to the warm worker; its events arrive on the returned Job. The warm worker
        validates every job, hidden or not (`hidden` is RunnerClient's)."""
        reader, writer = await asyncio.open_unix_connection(str(self.where.socket))
        msg: dict[str, Any] = {
            "cmd": "submit",
            "experiment": experiment,
            "params": dict(params or {}),
            "device": int(device or 0),
        }
        writer.write(encode(msg))
        await writer.drain()
        job = Job("remote", experiment, dict(params or {}), int(device or 0))
        self._writers[id(job)] = writer
        pump = asyncio.create_task(self._pump(job, reader, writer))
        self._pumps.add(pump)
        pump.add_done_callback(self._pumps.discard)
        return job

    async def _pump(self, job: Job, reader: asyncio.StreamReader, writer: Any) -> None:
        why = "it closed the connection"
        try:
            while not job.done:
                msg = await read_frame_async(reader)
                if msg is None:
                    break
                if "job" in msg:
                    job.id = str(msg["job"])
                elif isinstance(msg.get("event"), dict):
                    job._push(msg["event"])
        except (OSError, ProtocolError) as exc:
            why = str(exc) or type(exc).__name__
        finally:
            if not job.done:
                job._push(
                    ev.make(
                        ev.FAILED,
                        job.id,
                        kind=ev.KIND_CRASHED,
                        message=f"the warm worker went away during the job ({why}); the next "
                        "command starts a new one",
                    )
                )
            self._writers.pop(id(job), None)
            writer.close()

    async def cancel(self, job: Job) -> None:
        """Ask the warm worker to cancel `job` (cooperatively, then by replacing its worker)."""
        writer = self._writers.get(id(job))
        if writer is None or job.done:
            return
        with contextlib.suppress(OSError):
            writer.write(encode({"cmd": "cancel"}))
            await writer.drain()


def reachable(where: Place, timeout: float = 1.0) -> bool:
    """Whether a warm worker answers on `where`'s socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(where.socket))
        except OSError:
            return False
    return True


def ask(where: Place, cmd: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """One command (status, stop) to the warm worker and its answer; None when none answers."""

    async def go() -> dict[str, Any] | None:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(where.socket)), timeout
        )
        try:
            writer.write(encode({"cmd": cmd}))
            await writer.drain()
            return await asyncio.wait_for(read_frame_async(reader), timeout)
        finally:
            writer.close()

    try:
        return asyncio.run(go())
    except (OSError, ProtocolError, asyncio.TimeoutError):
        return None


def start(where: Place, device: int = 0) -> bool:
    """Start a warm worker for `where` (detached: it outlives this command) and wait until its
    socket answers; False when it did not (its log says why)."""
    with open(where.log, "ab") as log:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "gpulab.runner.warm.server",
                "--folder",
                str(where.folder),
                "--key",
                where.key,
                "--device",
                str(device),
                "--detach",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            check=False,
            timeout=START_TIMEOUT_S,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if reachable(where):
            return True
        time.sleep(0.02)
    return False


def warm_client(device: int = 0, say: Callable[[str], None] | None = None) -> RemoteClient | None:
    """A client of this setting's warm worker, started (and `say` told so) when there is none;
    None when commands should start their own worker (GPULAB_WARM_WORKER=0, no private folder,
    a server that would not start: `say` says why)."""
    tell = say or (lambda _line: None)
    if not wanted():
        return None
    try:
        where = place()
    except (NotPrivate, OSError) as exc:
        tell(f"no warm worker ({exc}); this check starts its own")
        return None
    if reachable(where):
        return RemoteClient(where)
    minutes = idle_seconds() / 60
    tell(
        "starting a warm worker for this session: later checks reuse it "
        f"(it stops after {minutes:g} min without work; `gpulab ex worker --stop` stops it now)"
    )
    if not start(where, device):
        tell(f"the warm worker did not start (see {where.log}); this check starts its own")
        return None
    return RemoteClient(where)
