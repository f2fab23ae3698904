"""The app's side of the worker process: start it, read its handshake, route its events,
replace it when it dies, stop it on the way out.

`WorkerLink` is an object `GpuLabApp` (`app.py`) owns and hands itself to: the app owns the
screen, the keys and what the panes ask for; the link keeps the lab's worker state current (the
runner, the handshake, the inventory, the worker's status and log lines: `state.LabState`), and
everything that happens because the worker started, spoke, crashed or was killed. The panes
show that state as the main screen hands it down; the link never touches a pane.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from textual.message import Message
from textual.worker import WorkType

from gpulab.app.state import LabState
from gpulab.core import events as ev
from gpulab.core.devices import Inventory
from gpulab.exercises.outcome import PREPARE_JOB


class RunnerEventArrived(Message):
    """A runner event that arrived on another thread than the app's (a test's runner): the app
    hands it back to the link on its own loop."""

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        super().__init__()


RunnerFactory = Callable[..., Any]
READY_TIMEOUT_S = 180.0  # a cold torch + CUDA import on a busy box can take a minute
SHUTDOWN_TIMEOUT_S = 5.0


def default_runner_factory(**kw: Any) -> Any:
    """A RunnerClient with `kw` (imported when the worker starts)."""
    # deferred: the runner loads when the worker starts, after the first frame
    from gpulab.runner.client.runner_client import RunnerClient

    return RunnerClient(**kw)


class WorkerLink:
    """Starts, follows and replaces the app's worker; the app reads `runner` and `handshake`."""

    def __init__(self, app: LabState, runner_factory: RunnerFactory, device_index: int) -> None:
        self.app = app
        self.runner_factory = runner_factory
        self.device_index = device_index
        self.main_ready: asyncio.Event | None = None  # the app's, set once the panes mount
        self.worker_log: list[str] = []  # the worker's own log lines, the last 500
        self.loop_thread: int | None = None  # the event loop's thread, set on mount
        self.quitting = False  # from here on a failure is the shutdown's, not news
        self.calibration_tried = False  # once per session: a failed one is not retried in a loop
        self.opened: str | None = None  # the exercise open now, prepared once the worker is up
        self.prepared: set[tuple[Any, str]] = set()  # (worker pid, exercise): asked once each
        # What the worker does before a job submitted now can start (a check waits behind it).
        self.ahead: dict[str, str] = {}

    @property
    def runner(self) -> Any:
        """The RunnerClient (or a test's fake) the lab submits to, once started."""
        return self.app.runner

    @property
    def handshake(self) -> dict[str, Any] | None:
        """The worker's hello, once it is ready."""
        return self.app.handshake

    def _status(self, text: str) -> None:
        self.app.worker_status = text

    def _ahead_changed(self) -> None:
        self.app.waiting_for = " and ".join(self.ahead.values())

    def begin(self) -> None:
        """Start the worker in the background (after the first frame)."""
        self.loop_thread = threading.get_ident()
        # The coroutine function, not a coroutine: an app that exits first creates none.
        start: WorkType[None] = self._start_runner
        self.app.run_worker(start, name="runner start", exit_on_error=False)

    async def _start_runner(self) -> None:
        try:
            runner = self.runner_factory(
                device_index=self.device_index, on_event=self.on_runner_event
            )
            self.app.runner = runner
            await runner.start()
            handshake = await runner.wait_ready(timeout=READY_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - shown, and the lab stays usable to read
            await self._main_mounted()
            self.app.sub_title = "worker failed to start"
            self._status("worker failed to start")
            self.app.notify(
                f"{type(exc).__name__}: {exc}",
                title=ev.KIND_WORKER_START,
                severity="error",
                timeout=15,
            )
            return
        await self._main_mounted()
        self.apply_handshake(handshake)

    async def _main_mounted(self) -> None:
        """The worker may answer before the screen has mounted its panes: wait for them."""
        if self.main_ready is not None:
            await self.main_ready.wait()

    def apply_handshake(self, handshake: dict[str, Any]) -> None:
        """Take the worker's hello: the sub-title, and the state the panes show (its inventory,
        its pid and status)."""
        inventory = handshake.get("inventory") or {}
        self.app.sub_title = Inventory.from_dict(inventory).label()
        pid = handshake.get("pid")
        ready = handshake.get("ready_s")
        took = f" · ready in {ready:.1f} s" if isinstance(ready, int | float) else ""
        self._status(f"worker pid {pid}{took}")
        self.app.handshake = handshake
        self.app.inventory = inventory
        if handshake.get("calibrated") is False and not self.calibration_tried:
            self.calibration_tried = True
            status = f"worker pid {pid}{took}"
            self.app.run_worker(
                self._calibrate(status), name="calibrate", group="calibrate", exit_on_error=False
            )
        if self.opened is not None:
            # Queued after the calibration: the preparation times nothing that must be exact,
            # but it reads the ceilings a check reads.
            self.prepare_exercise(self.opened)

    def prepare_exercise(self, exercise_id: str) -> None:
        """Have the worker compile what `exercise_id`'s check needs (the `exercise-prepare`
        job) while the learner reads the statement, once per worker process."""
        self.opened = exercise_id
        handshake = self.handshake
        if self.runner is None or handshake is None or self.quitting:
            return  # the handshake prepares the exercise open by then
        key = (handshake.get("pid"), exercise_id)
        if key in self.prepared:
            return
        self.prepared.add(key)
        self.app.run_worker(
            self._prepare(exercise_id, handshake.get("pid")),
            name=f"prepare {exercise_id}",
            group="prepare",
            exit_on_error=False,
        )

    async def _prepare(self, exercise_id: str, pid: Any) -> None:
        key = f"prepare {exercise_id}"
        self.ahead[key] = f"{exercise_id}'s preparation (its check's kernels compile once)"
        self._ahead_changed()
        try:
            job = await self.runner.submit(PREPARE_JOB, {"exercise": exercise_id}, hidden=True)
            async for _event in job:
                pass
        except Exception:  # noqa: BLE001 - an optimisation only: the first check compiles itself
            return
        finally:
            self.ahead.pop(key, None)
            self._ahead_changed()
        final = job.final or {}
        summary = (final.get("result") or {}).get("summary") or {}
        if final.get("type") == ev.RESULT and summary.get("prepared"):
            seconds = float(summary.get("seconds") or 0.0)
            self._status(f"worker pid {pid} · {exercise_id}'s check prepared in {seconds:.1f} s")

    async def _calibrate(self, status: str) -> None:
        """Measure this device's ceilings now, while the learner reads, so their first check
        reads them from the cache instead of spending seconds calibrating inside the check."""
        runner = self.runner
        t0 = time.monotonic()
        self._status(f"{status} · calibrating this device's ceilings (once)…")
        self.ahead["calibrate"] = "the device's calibration (once per machine)"
        self._ahead_changed()
        try:
            job = await runner.submit("calibrate", {"remeasure": False})
            async for event in job:
                if event.get("type") == ev.PROGRESS:
                    pct = 100 * float(event.get("fraction") or 0.0)
                    self._status(
                        f"{status} · calibrating this device's ceilings (once): {pct:.0f}%"
                    )
        except Exception as exc:  # noqa: BLE001 - the lab works uncalibrated; the check calibrates
            self._status(f"{status} · calibration failed: {exc}")
            return
        finally:
            self.ahead.pop("calibrate", None)
            self._ahead_changed()
        final = job.final or {}
        if final.get("type") == ev.RESULT:
            took = time.monotonic() - t0
            self._status(f"{status} · ceilings calibrated in {took:.1f} s")
        else:
            why = final.get("message") or final.get("type") or "stopped"
            self._status(f"{status} · calibration {why}: the first check calibrates")

    def on_runner_event(self, event: dict[str, Any]) -> None:
        """The client's tap on every event; job events are also read by the panel's job loop."""
        if self.loop_thread is not None and threading.get_ident() != self.loop_thread:
            self.app.post_message(RunnerEventArrived(event))  # thread-safe; handled on the loop
            return
        kind = event.get("type")
        if kind == ev.MEMORY:
            reading = event.get("reading")
            if isinstance(reading, dict):
                self.app.memory_reading = reading
            return
        if kind == ev.FAILED and event.get("kind") == ev.KIND_CRASHED:
            self._worker_crashed(event)
            return
        if event.get("job"):
            return
        if kind == ev.LOG:
            line = f"[worker] {event.get('line', '')}"
            self.worker_log.append(line)
            del self.worker_log[:-500]
            self.app.worker_line = line  # a live run's log shows it
        elif kind == ev.FAILED:
            self.app.notify(
                str(event.get("message", "")), title=str(event.get("kind")), severity="error"
            )

    def _worker_crashed(self, event: dict[str, Any]) -> None:
        self.app.notify(
            str(event.get("message") or "the worker died; a new one is starting"),
            title="Worker crashed",
            severity="error",
            timeout=10,
        )
        self._status("worker crashed · starting a new one…")
        self.app.run_worker(
            self._await_new_worker(),
            name="worker restart",
            group="restart",
            exclusive=True,
            exit_on_error=False,
        )

    def check_worker(self, final: dict[str, Any] | None = None) -> None:
        """After a run: a worker killed by a cancel is replaced without a crash event."""
        final = final or {}
        # A crash arrives through on_event (`_worker_crashed`); a kill after cancel does not.
        if self.runner is None or final.get("how") != "killed":
            return
        self._status("starting a new worker…")
        self.app.run_worker(
            self._await_new_worker(announce=False),
            name="worker restart",
            group="restart",
            exclusive=True,
            exit_on_error=False,
        )

    async def _await_new_worker(self, announce: bool = True) -> None:
        runner = self.runner
        if runner is None:
            return
        old = (self.handshake or {}).get("pid")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READY_TIMEOUT_S
        # The client drops the old worker's handshake only once it has seen it exit.
        while runner.worker_pid == old and loop.time() < deadline:
            await asyncio.sleep(0.05)
        handshake = await runner.wait_ready(timeout=max(1.0, deadline - loop.time()))
        self.apply_handshake(handshake)
        if announce:
            self.app.notify(f"New worker ready (pid {handshake.get('pid')}).", title="Worker")

    async def shutdown(self, grace_s: float = 2.0) -> None:
        """Stop the workers; `grace_s`: the worker's time to leave before it is killed."""
        self.quitting = True  # what fails from here on is the shutdown, not news
        runner = self.runner
        self.app.runner = None
        if runner is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(runner.shutdown(grace_s=grace_s), SHUTDOWN_TIMEOUT_S)
