"""The warm worker: a RunnerClient kept alive between CLI commands, served on a Unix socket.

    python -m gpulab.runner.warm.server --folder DIR --key KEY [--device N] [--detach]

The first `gpulab ex check` of a session starts it (`remote.warm_client`); it starts the worker
of its device at once and then runs every job a command submits on it, so a repeat check costs
the check, not a worker's start (torch's import, the CUDA context). Jobs are queued and run one
at a time, as in the TUI's runner; a job whose command went away (Ctrl-C, a closed terminal) is
cancelled. Without work for `GPULAB_WARM_IDLE_S` (15 min) it shuts its workers down and exits.

One server per setting (place.py): it holds an exclusive lock on its lock file for its whole
life, and a second one started beside it exits at once. The socket is 0600 in a 0700 folder, and
a peer of another user is refused (SO_PEERCRED). A frame is the runner's (protocol.py):

    command -> server   {"cmd": "submit", "experiment", "params", "device"}, then maybe
                        {"cmd": "cancel"}; or {"cmd": "hello", "device"}, {"cmd": "status"},
                        {"cmd": "stop"}
    server -> command   {"job": id, "worker": pid}, then {"event": {...}} up to the final one;
                        {"hello": the worker's handshake} or {"error": why}; {"status": {...}};
                        {"stopping": true}
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from gpulab.core import events as ev
from gpulab.core.errors import BadInput
from gpulab.runner.client.runner_client import RunnerClient
from gpulab.runner.protocol import ProtocolError, encode, read_frame_async
from gpulab.runner.warm.place import Place, idle_seconds, peer_uid, private_dir

HELLO_TIMEOUT_S = 600.0  # a worker's cold start on a busy GPU host can take minutes


class WarmServer:
    """Serves jobs from CLI commands on this user's runners, one per device, until idle."""

    def __init__(self, where: Place, idle_s: float, device: int = 0) -> None:
        self.where = where
        self.idle_s = idle_s
        self.first_device = device
        self.clients: dict[int, RunnerClient] = {}
        self.active = 0  # connections being served
        self.jobs = 0
        self.last_used = time.monotonic()
        self.started = time.time()
        self._stop = asyncio.Event()

    async def client(self, device: int) -> RunnerClient:
        """The runner of `device`, started on first use."""
        found = self.clients.get(device)
        if found is None:
            found = self.clients[device] = RunnerClient(device_index=device, standby=False)
            await found.start()
        return found

    def status(self) -> dict[str, Any]:
        """What `gpulab ex worker` prints: the server, its workers and how long it has idled."""
        idle_for = 0.0 if self.active else time.monotonic() - self.last_used
        return {
            "pid": os.getpid(),
            "socket": str(self.where.socket),
            "started_at": self.started,
            "jobs": self.jobs,
            "idle_for_s": round(idle_for, 1),
            "stops_after_idle_s": self.idle_s,
            "workers": {
                str(d): {"pid": c.worker_pid, "ready": c.ready, "busy": c.busy}
                for d, c in self.clients.items()
            },
        }

    async def serve(self) -> int:
        """Listen until idle or told to stop; 0, or 0 at once when another server has the lock."""
        private_dir(self.where.folder)
        lock = os.open(self.where.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            return 0  # another server of this setting is alive: it answers
        path = self.where.socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a socket left by a server that died: the lock says it is gone
        old = os.umask(0o077)
        try:
            server = await asyncio.start_unix_server(self._connection, path=str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._stop.set)
        try:
            await self.client(self.first_device)  # the command that started us wants it
            await self._until_idle()
        finally:
            server.close()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            for c in self.clients.values():
                with contextlib.suppress(Exception):  # stopping: the other runners still go
                    await c.shutdown()
            os.close(lock)
        return 0

    async def _until_idle(self) -> None:
        tick = min(5.0, max(0.2, self.idle_s / 4))
        while not self._stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stop.wait(), tick)
            busy = self.active or any(c.busy for c in self.clients.values())
            if busy:
                self.last_used = time.monotonic()
            elif time.monotonic() - self.last_used > self.idle_s:
                return

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.getuid():
            writer.close()
            return
        working = False  # a probe or a status is not work: it does not keep the server up
        try:
            first = await read_frame_async(reader) or {}
            cmd = first.get("cmd")
            working = cmd in ("submit", "hello")
            self.active += working
            if cmd == "submit":
                await self._submit(first, reader, writer)
            elif cmd == "hello":
                await self._hello(int(first.get("device") or 0), writer)
            elif cmd == "status":
                await _send(writer, {"status": self.status()})
            elif cmd == "stop":
                await _send(writer, {"stopping": True})
                self._stop.set()
        except (ProtocolError, OSError):
            pass  # a command that went away or spoke nonsense: nothing to answer
        finally:
            if working:
                self.active -= 1
                self.last_used = time.monotonic()
            writer.close()

    async def _submit(
        self, msg: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        device = int(msg.get("device") or 0)
        client = await self.client(device)
        try:
            job = await client.submit(
                str(msg.get("experiment")), dict(msg.get("params") or {}), device=device
            )
        except Exception as exc:  # noqa: BLE001 - a refused job is an answer, not the server's end
            kind = ev.KIND_BAD_PARAMS if isinstance(exc, BadInput) else ev.KIND_EXCEPTION
            await _send(writer, {"event": ev.make(ev.FAILED, "", kind=kind, message=str(exc))})
            return
        self.jobs += 1
        await _send(writer, {"job": job.id, "worker": client.worker_pid})
        listener = asyncio.create_task(self._listen(reader, client, job))
        try:
            async for event in job:
                await _send(writer, {"event": event})
        except OSError:
            if not job.done:
                await client.cancel(job)  # the command is gone: nobody wants the verdict
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    async def _hello(self, device: int, writer: asyncio.StreamWriter) -> None:
        """The handshake of `device`'s worker (what it can run), once it is ready."""
        client = await self.client(device)
        try:
            hello = await client.wait_ready(HELLO_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a worker that cannot start: the command says why
            await _send(writer, {"error": f"{type(exc).__name__}: {exc}"})
            return
        await _send(writer, {"hello": hello})

    async def _listen(self, reader: asyncio.StreamReader, client: RunnerClient, job: Any) -> None:
        """A cancel from the command, or its going away, cancels the job."""
        with contextlib.suppress(ProtocolError, OSError):
            while not job.done:
                msg = await read_frame_async(reader)
                if msg is None or msg.get("cmd") == "cancel":
                    break
        if not job.done:
            await client.cancel(job)


async def _send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    writer.write(encode(message))
    await writer.drain()


def main(argv: list[str] | None = None) -> int:
    """Serve (after detaching from the command that started it, with --detach)."""
    p = argparse.ArgumentParser(prog="python -m gpulab.runner.warm.server")
    p.add_argument("--folder", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--detach", action="store_true", help="fork, new session, parent returns")
    args = p.parse_args(argv)
    if args.detach:
        if os.fork():
            os._exit(0)  # the starting command reaps this at once; the server lives on
        os.setsid()
    # deferred: after the fork; unused names: importing them registers the hidden jobs (a check,
    # a profile, a preparation, the driver's figures), which the runner client validates
    from gpulab.exercises import job, prewarm, profile_job  # noqa: F401
    from gpulab.experiments import kernel_device  # noqa: F401

    where = Place(Path(args.folder), args.key)
    return asyncio.run(WarmServer(where, idle_seconds(), args.device).serve())


if __name__ == "__main__":
    sys.exit(main())
