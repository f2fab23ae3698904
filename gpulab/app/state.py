"""The lab's shared state: one typed, reactive home, the app, which `GpuLabApp` builds on.

Each attribute is a Textual `var`. The app and its `WorkerLink` set them (the worker spoke, a GPU
was chosen, a run finished); the main screen hands each pane the ones its entry in the pane
table names (`pane_table.PANES`, `takes`), by watching them here and setting the pane's
attribute of the same name: attributes go down, and the panes' Messages (`messages.py`) come
back up. A test's bare app can subclass `LabState` to give its panes the same state.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.reactive import var


class LabState(App[None]):
    """The state every pane may show, and nothing else (the app's keys and actions are
    `GpuLabApp`'s)."""

    handshake: var[dict[str, Any] | None] = var(None)
    """The worker's hello (its pid, inventory, versions), once it is ready."""
    inventory: var[dict[str, Any] | None] = var(None)
    """What the worker can run here (its handshake's inventory, as a dict)."""
    gpus: var[Any] = var(None)
    """NVML's inventory of the GPUs (gpulab.telemetry.inventory.SystemInventory), once read."""
    device_index: var[int] = var(0)
    """The CUDA device the worker runs on by default."""
    device: var[int | None] = var(None)
    """The CUDA device a person chose for runs and checks; None: the worker's default."""
    runner: var[Any] = var(None)
    """The runner client jobs are submitted to (None before the worker starts, after quit)."""
    store: var[Any] = var(None)
    """The progress store (gpulab.store.database.Store), one connection for every pane."""
    runs: var[tuple[Any, ...]] = var(())
    """This session's finished experiment runs (gpulab.app.runs.RunState), oldest first."""
    worker_status: var[str] = var("worker: starting…")
    """The worker's state in words (starting, ready, calibrating, restarting)."""
    worker_line: var[str] = var("", always_update=True)
    """The worker's latest own log line (not a job's): a live run's log shows it."""
    waiting_for: var[str] = var("")
    """What a job submitted now waits for, in words ('' when nothing of the lab's own)."""
    memory_reading: var[dict[str, Any] | None] = var(None, always_update=True)
    """The worker's latest allocator reading (a runner `memory` event)."""
    job_running: var[bool] = var(False)
    """Whether a run or a check is in progress (the memory gauge samples fast)."""
    gauge_gpu: var[tuple[int, str] | None] = var(None)
    """The GPU the memory gauge follows: (NVML index, label such as "cuda:1" or "")."""
