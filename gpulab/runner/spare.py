"""The standby spare (runner client, part 3 of 3): a worker that has imported everything and waits.

Once the worker is ready and idle, the client keeps a spare worker (`--standby`) that holds no
CUDA context (no GPU memory). A killed, crashed or retiring worker is replaced by promoting the
spare (it only creates its CUDA context), and a new spare starts once the new worker is ready and
idle. A spare still importing is stopped (SIGSTOP) while a job runs, so it takes no CPU from a
measurement.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

from gpulab.runner.spawn import MAX_START_FAILURES
from gpulab.runner.spawn import WorkerProcess as _Worker

SPARE_DELAY_S = 0.5  # the worker idles this long before a spare starts (not in `gpulab run`)
NO_STANDBY_ENV = "GPULAB_NO_STANDBY"


def standby_wanted(flag: bool, env: dict[str, str]) -> bool:
    """The constructor's flag, unless GPULAB_NO_STANDBY=1 (in the given env or this process's)."""
    off = env.get(NO_STANDBY_ENV, os.environ.get(NO_STANDBY_ENV, ""))
    return flag and off.strip() not in ("1", "true", "yes")


class SpareMixin:
    """Replacing a worker and keeping the spare; mixed into RunnerClient, whose state it uses."""

    def _replace(self, worker: _Worker) -> None:
        """`worker` takes no more jobs: the spare takes its place now, or a fresh worker starts."""
        if worker is not self._worker:
            return
        self._worker = None
        self.handshake = None
        self._notify()
        if self._closed or self._start_error:
            return
        self.restarts += 1
        spare, self._spare = self._spare, None
        if spare is not None and not spare.exited and spare.cmd_fd >= 0:
            spare.role = "active"
            spare.promoted = time.monotonic()
            self._worker = spare
            self._resume(spare)
            # If it died a moment ago, the send fails and its exit counts as a failed start.
            spare.send({"cmd": "activate"})
        else:
            self._spawn_soon("active")

    def _spawn_soon(self, role: str) -> None:
        task = self._task(self._spawn(role))
        self._spawns.add(task)
        task.add_done_callback(self._spawns.discard)

    def _schedule_spare(self) -> None:
        """A spare once the worker has been ready and idle a moment (not during a run's first job)."""
        if not self.standby or self._closed or self._spare is not None or self._spare_timer:
            return
        worker = self._worker
        if worker is None or worker.hello is None or self._current is not None:
            return
        if self._spare_failures >= MAX_START_FAILURES:
            return
        loop = asyncio.get_running_loop()
        self._spare_timer = loop.call_later(SPARE_DELAY_S, self._spare_due)

    def _spare_due(self) -> None:
        self._spare_timer = None
        worker = self._worker
        if self._closed or self._spare is not None or self._current is not None:
            return  # a job's end schedules it again
        if worker is None or worker.hello is None or self._spawns:
            return
        self._spawn_soon("spare")

    def _hold_spare(self) -> None:
        """A spare still importing would take CPU from the job being measured: stop it meanwhile.

        Linux only: there PDEATHSIG (SIGKILL) still ends a stopped spare when this process dies.
        """
        spare = self._spare
        if spare is None or spare.standby is not None or spare.paused or spare.exited:
            return
        if not spare.guarded:  # stopped before its PDEATHSIG, it would outlive our death
            return
        if sys.platform.startswith("linux"):
            spare.signal(signal.SIGSTOP)
            spare.paused = True

    def _resume_spare(self) -> None:
        if self._spare is not None:
            self._resume(self._spare)

    @staticmethod
    def _resume(worker: _Worker) -> None:
        if worker.paused:
            worker.signal(signal.SIGCONT)
            worker.paused = False
