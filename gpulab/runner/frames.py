"""Reading what a worker writes (runner client, part 2 of 3): its event frames, stdout and stderr.

Frames carry events (forwarded to the job they name), the hello handshake, and the spare's
`guarded` / `standby` notes and a worker's `retiring` notice. Raw output lines become `log` events
of the running job (or of no job), and stderr's last lines are kept for a crash report.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from gpulab.core import events as ev
from gpulab.runner.protocol import PROTOCOL, ProtocolError, read_frame_async
from gpulab.runner.spawn import WorkerProcess as _Worker


class FramesMixin:
    """Reads a worker's pipes; mixed into RunnerClient, whose state it uses."""

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
