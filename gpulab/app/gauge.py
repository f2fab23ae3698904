"""What the memory gauge hears: Messages the app and the panes post to it (`tell_gauge`).

The worker's pid and allocator readings come from the app, job starts and ends from the panes
that run jobs, the selected GPU from the GPU info pane (through the app). The gauge
(`panes/memory_gauge.py`) handles each; this module stays light so a pane that runs jobs does
not import the gauge's telemetry to tell it so.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message


class GaugeMessage(Message, bubble=False):
    """A message for the memory gauge; it goes to the gauge alone."""


class WorkerPid(GaugeMessage):
    """The worker process is `pid` (None: no worker): its memory is the worker's layer."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        super().__init__()


class MemoryReading(GaugeMessage):
    """The worker's allocator reading from a runner `memory` event."""

    def __init__(self, reading: dict[str, Any]) -> None:
        self.reading = reading
        super().__init__()


class JobStarted(GaugeMessage):
    """A job (a run or a check) started: sample fast and track the run's peak."""


class JobFinished(GaugeMessage):
    """The job ended: back to the idle rate."""


class GpuSelected(GaugeMessage):
    """Follow NVML GPU `nvml_index`; `label` ("cuda:1") names it on the bar when there are
    several."""

    def __init__(self, nvml_index: int, label: str = "") -> None:
        self.nvml_index = nvml_index
        self.label = label
        super().__init__()


def tell_gauge(app: Any, message: GaugeMessage) -> None:
    """Post `message` to the main screen's memory gauge; none mounted yet, nothing to tell."""
    try:
        gauge = app.screen_stack[0].query_one("#memory-gauge")
    except Exception:  # noqa: BLE001 - not mounted yet, or no gauge on this screen
        return
    gauge.post_message(message)
