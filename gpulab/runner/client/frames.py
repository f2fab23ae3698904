"""Reading what a worker writes: its event frames, stdout and stderr (the runner client's side).

`FrameReader` reads one worker's pipes and says what it read through the callbacks it was given:
an event frame (`on_event`), the hello handshake checked and filled in on the worker
(`on_hello`, or `on_refused` for another protocol), the spare's `guarded` / `standby` notes and a
worker's `retiring` notice, and each raw output line (`on_line`); stderr's last lines are kept on
the worker for a crash report. What an event or a line belongs to is the caller's to decide.

One kind of line is dropped: the start and stop notes PyTorch's profiler (kineto) writes straight
to the process's stderr each time a torch.profiler session opens or closes. The checks that
profile a learner's call would otherwise show them in the learner's output as if the learner's
code had printed them.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

from gpulab.runner.client.handle import WorkerProcess
from gpulab.runner.protocol import PROTOCOL, ProtocolError, read_frame_async

WorkerCallback = Callable[[WorkerProcess], None]
# "USDT:2026-11-26 09:16:55 17664:17664 SyncActivityProfilerHandler.cpp:52] profiler_start"
PROFILER_NOTE = re.compile(
    r"USDT:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \w+\.cpp:\d+\] profiler_(start|stop)"
)


class FrameReader:
    """Turns a worker's pipes into calls: one reader serves every worker of a client."""

    def __init__(
        self,
        *,
        device_index: int,
        note: Callable[[str], None],
        on_event: Callable[[WorkerProcess, dict[str, Any]], None],
        on_line: Callable[[WorkerProcess, str, str], None],
        on_hello: WorkerCallback,
        on_refused: Callable[[WorkerProcess, str], None],
        on_guarded: WorkerCallback,
        on_standby: WorkerCallback,
        on_retiring: Callable[[WorkerProcess, str], None],
    ) -> None:
        self.device_index = device_index
        self.note = note
        self.on_event = on_event
        self.on_line = on_line
        self.on_hello = on_hello
        self.on_refused = on_refused
        self.on_guarded = on_guarded
        self.on_standby = on_standby
        self.on_retiring = on_retiring

    async def read_frames(self, worker: WorkerProcess, reader: asyncio.StreamReader) -> None:
        """Read `worker`'s event pipe until EOF; a malformed frame kills the worker."""
        try:
            while True:
                message = await read_frame_async(reader)
                if message is None:
                    return
                self.dispatch(worker, message)
        except ProtocolError as exc:
            self.note(f"protocol error, replacing the worker: {exc}")
            worker.kill()

    async def read_output(
        self, worker: WorkerProcess, stream: asyncio.StreamReader, name: str
    ) -> None:
        """Pass each line of `worker`'s stdout or stderr on (the stderr tail kept for crash
        reports)."""
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
            if name == "stderr" and PROFILER_NOTE.fullmatch(line):
                continue
            if name == "stderr":
                worker.stderr_tail.append(line)
            self.on_line(worker, name, line)

    def dispatch(self, worker: WorkerProcess, message: dict[str, Any]) -> None:
        """Route one message by its kind: event, hello, guarded, standby or retiring."""
        kind = message.get("msg")
        if kind == "event":
            self.on_event(worker, message["event"])
        elif kind == "hello":
            self._hello(worker, message)
        elif kind == "guarded":
            worker.guarded = True
            self.on_guarded(worker)
        elif kind == "standby":
            worker.standby = message
            took = time.monotonic() - worker.spawned
            self.note(f"standby worker {worker.pid} imported in {took:.2f} s, waiting")
            self.on_standby(worker)
        elif kind == "retiring":
            self.on_retiring(worker, message.get("reason", ""))

    def _hello(self, worker: WorkerProcess, message: dict[str, Any]) -> None:
        if message.get("protocol") != PROTOCOL:
            self.on_refused(
                worker,
                f"the worker speaks protocol {message.get('protocol')}, this client {PROTOCOL}: "
                "a mixed installation of gpulab",
            )
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
            "calibrated": message.get("calibrated"),
            "spawn_to_ready_s": now - worker.spawned,
        }
        self.on_hello(worker)
