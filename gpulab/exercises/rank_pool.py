"""Ranks kept alive for a check's timing: one call of a collective per command, on every rank.

The grader times a learner's function in rounds beside our yardstick and the library
(gpulab.exercises.speed), one call of each in turn. A collective runs on N processes, and
starting them (and their communicators) for every call would time the start, not the
collective. So a collective exercise's timing spec drives a pool: N ranks started once
(gpulab.core.ranks, one GPU each with NCCL, or gloo on the CPU), each holding the learner's
function and the yardstick's loaded from their files, and the check's own code for everything
else. In each rank the check's `pool_start(rc, functions)` makes the object that serves the
commands: a command goes to every rank at once, each calls that object's method of the command's
name and answers; `ask` returns the answers in rank order once all have come.

What one timed call costs beyond the collective is the command's way there and the answers'
way back (tens of microseconds through a pipe); every contender pays it alike, and the check
sizes its buffers so a call takes milliseconds.

A command that raises in a rank (the learner's code failed at this size) or a rank that dies
stops the pool: its peers may be waiting for a message that rank will never send. So does a
command not answered by the deadline (a deadlock). The pool's ranks end with `close`, when the
pool is garbage, or with the process that started them (PR_SET_PDEATHSIG, gpulab.core.ranks).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import weakref
from typing import Any

from gpulab.core import ranks
from gpulab.exercises import ranked
from gpulab.exercises.api import CheckError
from gpulab.experiments.base import Context

POLL_S = 0.05
STOP_GRACE_S = 2.0


class PoolFailed(CheckError):
    """A rank's command failed, a rank died, or the ranks stopped answering; the pool is closed."""


def _shutdown(channels: list[Any], stop: threading.Event, thread: threading.Thread | None) -> None:
    for q in channels[0] if channels else []:
        with contextlib.suppress(Exception):
            q.put(("stop", ()))
    if thread is not None and thread.is_alive():
        thread.join(STOP_GRACE_S)
    stop.set()  # ranks still there are killed by the launcher
    if thread is not None:
        thread.join(STOP_GRACE_S + ranks.CANCEL_GRACE_S)


class RankPool:
    """`world` ranks of `backend` serving the check at `check_file` (see the module doc).

    `register(path, text, entry)` adds a function file before the first `ask`; each rank loads
    them in that order and hands the check's `pool_start(rc, functions)` the entry functions."""

    def __init__(
        self, check_file: str, check_text: str, world: int, backend: str, deadline_s: float
    ) -> None:
        self.check = (check_file, check_text)
        self.world, self.backend, self.deadline_s = world, backend, deadline_s
        self.files: list[tuple[str, str, str]] = []
        self._failures: list[BaseException] = []  # the launcher's, held apart from self (below)
        self.closed = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._channels: list[Any] = []  # the ranks' inboxes and their outbox, once started
        self._ready = threading.Event()
        self._finalizer: Any = None

    def register(self, path: str, text: str, entry: str) -> int:
        """The index the ranks will know this file's `entry` function by."""
        if self._thread is not None:
            raise RuntimeError("register every function before the pool starts")
        self.files.append((path, text, entry))
        return len(self.files) - 1

    def _start(self) -> None:
        job = (*self.check, self.files)
        ctx = Context(is_cancelled=self._stop.is_set)
        # The thread must not hold the pool itself, or a pool no one holds any more would never
        # be garbage, and its finalizer never stop the ranks
        world, backend, failures = self.world, self.backend, self._failures
        channels, ready = self._channels, self._ready

        def started(inboxes: list[Any], outbox: Any) -> None:
            channels.extend([inboxes, outbox])
            ready.set()

        def run() -> None:
            try:
                ranks.launch(ctx, _serve, world, job, backend=backend, warm=True, on_start=started)
            except BaseException as exc:  # noqa: BLE001 - reported by the next ask
                failures.append(exc)
            finally:
                ready.set()

        self._thread = threading.Thread(target=run, name="gpulab-rank-pool", daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, channels, self._stop, self._thread)

    def ask(self, command: str, *args: Any) -> list[Any]:
        """Every rank's answer to `command`, in rank order; PoolFailed if any rank failed."""
        if self.closed:
            raise PoolFailed("the ranks were stopped already")
        if self._thread is None:
            self._start()
        self._ready.wait()
        if not self._channels:
            self.close()
            why = str(self._failures[0]) if self._failures else "the ranks did not start"
            raise PoolFailed(why)
        inboxes, replies = self._channels
        for q in inboxes:
            q.put((command, args))
        answers: dict[int, Any] = {}
        errors: dict[int, str] = {}
        end = time.monotonic() + self.deadline_s
        while len(answers) + len(errors) < self.world:
            try:
                rank, ok, value = replies.get(timeout=POLL_S)
            except queue.Empty:
                if self._thread is not None and not self._thread.is_alive():
                    self.close()
                    why = str(self._failures[0]) if self._failures else "the ranks ended"
                    raise PoolFailed(why) from None
                if errors or time.monotonic() > end:
                    # A rank that failed leaves its peers waiting for its messages: what they
                    # are stuck in says nothing more, the first error is the story
                    self.close()
                    if errors:
                        raise PoolFailed(_first(errors)) from None
                    waiting = sorted(set(range(self.world)) - set(answers))
                    raise PoolFailed(
                        f"rank {waiting[0]} did not finish its {command} within "
                        f"{self.deadline_s:g} s: a deadlock (every rank waiting for a message "
                        "its peer never sends)?"
                    ) from None
                continue
            if ok:
                answers[rank] = value
            else:
                errors[rank] = value
        if errors:
            self.close()
            raise PoolFailed(_first(errors))
        return [answers[r] for r in range(self.world)]

    def close(self, wait: bool = True) -> None:
        """Stop the ranks (waiting briefly for them to leave on their own). `wait=False`: tell
        them and return; they leave in the background (a check's last answer is in, and their
        exit, a tenth of a second or more with NCCL, is nobody's wait)."""
        if self.closed:
            return
        self.closed = True
        if self._finalizer is None:
            return
        if wait:
            self._finalizer()
        else:
            threading.Thread(target=self._finalizer, name="gpulab-pool-close", daemon=True).start()


def _first(errors: dict[int, str]) -> str:
    rank = min(errors)
    return f"rank {rank}: {errors[rank]}"


def _serve(rc: Any, check_file: str, check_text: str, files: list[tuple[str, str, str]]) -> None:
    check, functions, guard = ranked.load_in_rank(rc, check_file, check_text, files)
    state = check.pool_start(rc, functions)
    while True:
        try:
            command, args = rc.inbox.get(timeout=POLL_S)
        except queue.Empty:
            rc.check_cancelled()
            continue
        if command == "stop":
            return
        try:
            value = getattr(state, command)(*args)
            ranked.guarded(guard)  # before the answer: a call that rebound what ran after it
        except (CheckError, ranked.Rebound) as exc:
            rc.outbox.put((rc.rank, False, str(exc)))
        except Exception as exc:  # noqa: BLE001 - the check's own failure, said as such
            rc.outbox.put((rc.rank, False, f"{type(exc).__name__}: {exc}"))
        else:
            rc.outbox.put((rc.rank, True, value))
