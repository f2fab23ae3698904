"""One browser session of `gpulab serve`: its own `gpulab` process, and how it is ended.

Each session runs the lab in a child process (textual-serve's web driver speaks to it over
stdin/stdout), and that process starts its own worker, hence its own CUDA context. Ending a
session must leave nothing holding GPU memory, so it is done in steps, each bounded: the app's
own quit (it stops its workers), then SIGTERM, then SIGKILL; the workers follow their app (a
closed pipe, the parent-death signal), and any that outlived it are ended by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from asyncio.subprocess import Process
from pathlib import Path
from typing import Any

from textual_serve.app_service import AppService

from gpulab.core.processes import start_time

QUIT_GRACE_S = 3.0  # the app's own quit: it gives its workers 2 s
TERM_GRACE_S = 5.0  # after SIGTERM (the lab's backstop ends it within 4 s)
KILL_WAIT_S = 2.0
PR_SET_PDEATHSIG = 1


def children(pid: int) -> list[int]:
    """Direct children of `pid`, from every thread's list (Linux /proc; empty elsewhere)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def descendants(pid: int) -> list[tuple[int, int]]:
    """Every live process below `pid`, as (pid, start tick)."""
    found: list[tuple[int, int]] = []
    todo = children(pid)
    while todo:
        child = todo.pop()
        tick = start_time(child)
        if tick is not None:
            found.append((child, tick))
            todo += children(child)
    return found


def end_leftovers(procs: list[tuple[int, int]]) -> list[int]:
    """SIGKILL each (pid, start tick) still alive as that same process; the pids killed."""
    killed = []
    for pid, tick in procs:
        if start_time(pid) == tick:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


def _die_with_server() -> None:
    """In the app's child, before exec: SIGTERM (a clean quit) when `gpulab serve` dies,
    even by SIGKILL, so no session outlives the server that showed it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


class LabSession(AppService):
    """textual-serve's app service, started from an argument list in a session of its own
    (Ctrl-C in the server's terminal is the server's to handle, not each app's), ended by
    `end()` within about QUIT_GRACE_S + TERM_GRACE_S + KILL_WAIT_S seconds."""

    def __init__(self, argv: list[str], **kw: Any) -> None:
        super().__init__(" ".join(argv), **kw)
        self.argv = argv
        self._ending: asyncio.Future[None] | None = None

    @property
    def pid(self) -> int | None:
        """The app process's pid, or None before it starts."""
        return None if self._process is None else self._process.pid

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,
            preexec_fn=_die_with_server,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        """Run the app until its output ends, then tell the page the session ended."""
        await super().run()
        # The app's output has ended: it quit, or it never started (an import error, say). The
        # page then shows "Session ended" with a Restart button instead of a blank terminal.
        with contextlib.suppress(Exception):
            await self.remote_close()

    async def end(self) -> None:
        """Ends the app and its workers; safe to call more than once, from anywhere."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end())
        await asyncio.shield(self._ending)

    async def _end(self) -> None:
        process = self._process
        if process is None:
            return
        # Taken before the app goes: its workers are re-parented once it has.
        tree = descendants(process.pid)
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(self.stop(), QUIT_GRACE_S)
        for sig, wait in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, KILL_WAIT_S)):
            if process.returncode is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), wait)
        if self._task is not None:  # stop() timed out: its reader is still waiting on stdout
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        end_leftovers(tree)
