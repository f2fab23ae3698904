"""The standby spare: a worker that has imported everything and waits (the runner client's side).

Once the worker is ready and idle, the client keeps a spare worker (`--standby`) that holds no
CUDA context (no GPU memory). A killed, crashed or retiring worker is replaced by promoting the
spare (it only creates its CUDA context), and a new spare starts once the new worker is ready and
idle. A spare still importing is stopped (SIGSTOP) while a job runs, so it takes no CPU from a
measurement.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable

from gpulab.core.processes import standby_off
from gpulab.runner.client.handle import WorkerProcess

SPARE_DELAY_S = 0.5  # the worker idles this long before a spare starts (not in `gpulab run`)
MAX_SPARE_FAILURES = 3  # spares dying before their `standby` note: stop starting them


def standby_wanted(flag: bool, env: dict[str, str]) -> bool:
    """The constructor's flag, unless GPULAB_NO_STANDBY=1 (in the given env or this process's)."""
    return flag and not standby_off(env)


class SparePool:
    """The one standby spare: when to start it, holding it during a job, handing it over.

    `spawn_spare()` starts a spare (its worker comes back through `adopt`); `idle()` says the
    active worker is ready with no job and the client is open; `spawning()` says a worker is
    being started right now; `note(line)` logs.
    """

    def __init__(
        self,
        *,
        standby: bool,
        spawn_spare: Callable[[], None],
        idle: Callable[[], bool],
        spawning: Callable[[], bool],
        note: Callable[[str], None],
        delay_s: float = SPARE_DELAY_S,
    ) -> None:
        self.standby = standby
        self.spawn_spare = spawn_spare
        self.idle = idle
        self.spawning = spawning
        self.note = note
        self.delay_s = delay_s
        self.spare: WorkerProcess | None = None
        self.failures = 0  # spares that died unasked since the last one that got ready
        self.closed = False
        self._timer: asyncio.TimerHandle | None = None

    def adopt(self, worker: WorkerProcess, busy: bool) -> None:
        """A spare just spawned; `busy`: a job runs now."""
        self.spare = worker
        if busy:
            self.hold()

    def take(self) -> WorkerProcess | None:
        """The spare, promoted to active and resumed, or None when there is none usable."""
        spare, self.spare = self.spare, None
        if spare is None or spare.exited or spare.cmd_fd < 0:
            return None
        spare.role = "active"
        spare.promoted = time.monotonic()
        _resume(spare)
        return spare

    def forget(self, worker: WorkerProcess) -> bool:
        """At a worker's exit: True (and no spare now) when it was the spare."""
        if worker is not self.spare:
            return False
        self.spare = None
        return True

    def ready(self) -> None:
        """The spare said `standby`: it imported everything."""
        self.failures = 0

    def died(self, worker: WorkerProcess, how: str, tail: list[str]) -> None:
        """A spare exited; unasked, that counts as a failure and another is scheduled."""
        if worker.why_exit:
            return
        self.failures += 1
        last = f": {tail[-1]}" if tail else ""
        self.note(f"the standby worker {worker.pid} {how}{last}")
        self.schedule()

    def failed_to_start(self, message: str) -> None:
        """Give up on spares for this session and say why."""
        self.failures = MAX_SPARE_FAILURES
        self.note(f"no standby worker: {message}")

    def schedule(self) -> None:
        """A spare once the worker has been ready and idle a moment (not during a run's first job)."""
        if not self.standby or self.closed or self.spare is not None or self._timer:
            return
        if not self.idle() or self.failures >= MAX_SPARE_FAILURES:
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.delay_s, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.closed or self.spare is not None or not self.idle() or self.spawning():
            return  # a job's end schedules it again
        self.spawn_spare()

    def hold(self) -> None:
        """A spare still importing would take CPU from the job being measured: stop it meanwhile.

        Linux only: there PDEATHSIG (SIGKILL) still ends a stopped spare when this process dies.
        """
        spare = self.spare
        if spare is None or spare.standby is not None or spare.paused or spare.exited:
            return
        if not spare.guarded:  # stopped before its PDEATHSIG, it would outlive our death
            return
        if sys.platform.startswith("linux"):
            spare.signal(signal.SIGSTOP)
            spare.paused = True

    def resume(self) -> None:
        """Let a paused spare run again."""
        if self.spare is not None:
            _resume(self.spare)

    def close(self) -> None:
        """Stop making spares."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def clear(self) -> None:
        """Forget the spare (it was taken or died)."""
        self.spare = None


def _resume(worker: WorkerProcess) -> None:
    if worker.paused:
        worker.signal(signal.SIGCONT)
        worker.paused = False
