"""One worker process as the runner client sees it: its pipes, its state, how to signal it."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
from typing import Any

from gpulab.runner.protocol import encode

STDERR_TAIL = 60  # lines of the worker's stderr kept for a crash report (a faulthandler dump fits)


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
        """The worker's process id."""
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
        """Close our end of the command pipe (the worker then sees EOF and exits)."""
        if self.cmd_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.cmd_fd)
            self.cmd_fd = -1

    def kill(self) -> None:
        """SIGKILL the worker (nothing if it is already gone)."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def signal(self, sig: int) -> None:
        """Send `sig` to the worker while it lives."""
        if not self.exited:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)
