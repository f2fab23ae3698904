"""The terminal going away (an SSH drop, `tmux kill-session`, a closed window): gone in a second.

Textual restores the terminal at exit by writing to it through its writer thread. Once the tty
has hung up, that thread dies on the first write (EIO), its bounded queue fills with the frames
drawn since, and the exit blocks for good in the queue's `put` (a run in flight draws enough to
fill it; faulthandler showed the main thread there). There is nothing left to restore on a
terminal that has gone, so the lab stops its workers with a short grace and leaves with
`os._exit`. A timer thread is the backstop: it ends the process even if the event loop itself is
stuck writing, and the workers follow their parent (EOF on their pipe, the parent-death signal).

SIGTERM is different: the terminal is still there and must be restored, so it is a normal quit,
bounded by a longer backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from typing import Any

LOST_EXIT_S = 0.8  # from the hang-up to the process gone, whatever the event loop is doing
WORKER_GRACE_S = 0.3  # the worker's time to leave by itself before it is killed
TERM_EXIT_S = 4.0  # SIGTERM: a normal quit that restores the terminal, bounded
EXIT_HANGUP = 128 + signal.SIGHUP  # what a shell reports for a process ended by SIGHUP
EXIT_TERM = 128 + signal.SIGTERM


def _backstop(seconds: float, code: int) -> None:
    guard = threading.Timer(seconds, os._exit, args=(code,))
    guard.daemon = True
    guard.start()


class TerminalWatch:
    """Installs the SIGHUP / SIGTERM handlers and the hang-up poll for one app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.leaving = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        """Install the SIGHUP and SIGTERM handlers and the poll for a terminal that has gone."""
        self._loop = asyncio.get_running_loop()
        # Plain signal handlers, not loop.add_signal_handler: those run inside the event loop,
        # which may be the thing that is stuck writing to the dead terminal.
        with contextlib.suppress(ValueError):  # not the main thread: the poll still works
            signal.signal(signal.SIGHUP, self._on_hangup)
            signal.signal(signal.SIGTERM, self._on_term)
        self.app.set_interval(1.0, self.check, name="terminal watchdog")

    def _on_hangup(self, signum: int, frame: Any) -> None:
        self.lost()

    def _on_term(self, signum: int, frame: Any) -> None:
        if self.leaving:
            return
        self.leaving = True
        _backstop(TERM_EXIT_S, EXIT_TERM)
        self._soon(lambda: self.app.run_worker(self.app.action_quit(), name="quit"))

    def lost(self) -> None:
        """The terminal is gone: stop the workers and leave, within LOST_EXIT_S."""
        if self.leaving:
            return
        self.leaving = True
        _backstop(LOST_EXIT_S, EXIT_HANGUP)
        self._soon(lambda: self.app.run_worker(self._leave(), name="lost terminal"))

    def _soon(self, callback: Any) -> None:
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: the timer ends us
                self._loop.call_soon_threadsafe(callback)

    async def _leave(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                self.app.shutdown_runner(grace_s=WORKER_GRACE_S), LOST_EXIT_S - 0.1
            )
        os._exit(EXIT_HANGUP)

    def check(self) -> None:
        """An SSH drop that sends no SIGHUP still hangs up the tty: its ioctls then fail."""
        for stream in (sys.__stdin__, sys.__stdout__):
            try:
                if stream is not None:
                    os.tcgetpgrp(stream.fileno())
            except (OSError, ValueError):  # ValueError: the stream was closed
                self.lost()
                return
