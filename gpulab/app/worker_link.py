"""The app's side of the worker process: start it, read its handshake, route its events,
replace it when it dies, stop it on the way out.

`WorkerLinkMixin` is a mixin of `GpuLabApp` (`app.py`), which owns the screen, the keys and
what the panes ask for. This part owns the runner client: everything that happens because the
worker started, spoke, crashed or was killed. Separate so that the worker's life can be read
in one place, apart from the app's actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpulab.app.gauge import MemoryReading, WorkerPid, tell_gauge
from gpulab.core import events as ev
from gpulab.core.devices import Inventory

if TYPE_CHECKING:
    from textual.app import App

    from gpulab.app.panes.experiments import ExperimentPanel

    _App = App[None]
else:
    _App = object

RunnerFactory = Callable[..., Any]
READY_TIMEOUT_S = 180.0  # a cold torch + CUDA import on a busy box can take a minute
SHUTDOWN_TIMEOUT_S = 5.0


def default_runner_factory(**kw: Any) -> Any:
    # deferred: the runner loads when the worker starts, after the first frame
    from gpulab.runner.client.runner_client import RunnerClient

    return RunnerClient(**kw)


class WorkerLinkMixin(_App):
    """Starts, follows and replaces the worker; `GpuLabApp` sets these attributes."""

    runner: Any
    runner_factory: RunnerFactory
    device_index: int
    handshake: dict[str, Any] | None
    worker_log: list[str]
    main_ready: asyncio.Event | None
    _quitting: bool
    _loop_thread: int | None

    if TYPE_CHECKING:  # the app's; a real stub would shadow it

        @property
        def panel(self) -> ExperimentPanel: ...

    def _begin_runner(self) -> None:
        # The coroutine function, not a coroutine: an app that exits first creates none.
        self.run_worker(self._start_runner, name="runner start", exit_on_error=False)

    async def _start_runner(self) -> None:
        try:
            self.runner = self.runner_factory(
                device_index=self.device_index, on_event=self._on_runner_event
            )
            await self.runner.start()
            handshake = await self.runner.wait_ready(timeout=READY_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - shown, and the lab stays usable to read
            await self._main_mounted()
            self.sub_title = "worker failed to start"
            self.panel.set_worker_status("worker failed to start")
            self.notify(
                f"{type(exc).__name__}: {exc}",
                title=ev.KIND_WORKER_START,
                severity="error",
                timeout=15,
            )
            return
        await self._main_mounted()
        self._apply_handshake(handshake)

    async def _main_mounted(self) -> None:
        """The worker may answer before the screen has mounted its panes: wait for them."""
        if self.main_ready is not None:
            await self.main_ready.wait()

    def _apply_handshake(self, handshake: dict[str, Any]) -> None:
        self.handshake = handshake
        inventory = handshake.get("inventory") or {}
        self.sub_title = Inventory.from_dict(inventory).label()
        pid = handshake.get("pid")
        ready = handshake.get("ready_s")
        took = f" · ready in {ready:.1f} s" if isinstance(ready, int | float) else ""
        self.panel.set_worker_status(f"worker pid {pid}{took}")
        self.panel.set_inventory(inventory)
        gpu = self.screen_stack[0].query_one("#gpu-info")
        if hasattr(gpu, "set_worker_info"):
            gpu.set_worker_info(handshake)
        tell_gauge(self, WorkerPid(pid))
        for pane in self.screen_stack[0].query("#exercises"):
            pane.set_inventory(inventory)  # type: ignore[attr-defined]

    def _on_runner_event(self, event: dict[str, Any]) -> None:
        """The client's tap on every event; job events are also read by the panel's job loop."""
        if self._loop_thread is not None and threading.get_ident() != self._loop_thread:
            self.call_from_thread(self._on_runner_event, event)
            return
        kind = event.get("type")
        if kind == ev.MEMORY:
            reading = event.get("reading")
            if isinstance(reading, dict):
                tell_gauge(self, MemoryReading(reading))
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
            live = self.panel.live
            if live is not None and not live.finished:
                live.add_log(line)
        elif kind == ev.FAILED:
            self.notify(
                str(event.get("message", "")), title=str(event.get("kind")), severity="error"
            )

    def _worker_crashed(self, event: dict[str, Any]) -> None:
        self.notify(
            str(event.get("message") or "the worker died; a new one is starting"),
            title="Worker crashed",
            severity="error",
            timeout=10,
        )
        self.panel.set_worker_status("worker crashed · starting a new one…")
        self.run_worker(
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
        self.panel.set_worker_status("starting a new worker…")
        self.run_worker(
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
        self._apply_handshake(handshake)
        if announce:
            self.notify(f"New worker ready (pid {handshake.get('pid')}).", title="Worker")

    async def shutdown_runner(self, grace_s: float = 2.0) -> None:
        """Stop the workers; `grace_s`: the worker's time to leave before it is killed."""
        self._quitting = True  # what fails from here on is the shutdown, not news
        runner, self.runner = self.runner, None
        if runner is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(runner.shutdown(grace_s=grace_s), SHUTDOWN_TIMEOUT_S)
