"""The panes of the main screen, in one table: the screen, its layout, the help and the command
palette all read it, so a new pane is one entry here (and its module under `panes/`).

Each entry names the pane's id, its title, where its class lives (imported after the first
frame), its column on a wide screen and the parts of the lab's shared state (`state.py`) the
screen hands it. On a wide, tall screen the left column stacks its panes in rows of equal
height and the right column shows one of its panes at a time, the height of the screen; below
100x30 the panes take turns behind a tab bar, in the table's order.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

from textual.widget import Widget


@dataclass(frozen=True)
class PaneSpec:
    """One pane of the main screen."""

    id: str
    title: str  # on its border, its tab and in the palette
    widget: str  # "package.module:Class", imported when the panes mount (after the first frame)
    column: Literal["left", "right"] = "left"
    takes: tuple[str, ...] = ()  # the shared state it shows (attributes the screen sets on it)
    telemetry: bool = False  # built with the screen's sampler (a test's fake one)
    help_title: str = ""  # its section in the help (default: "<title> pane")

    def load(self) -> type[Widget]:
        """The pane's class."""
        module, _, name = self.widget.partition(":")
        cls = getattr(importlib.import_module(module), name)
        if not (isinstance(cls, type) and issubclass(cls, Widget)):
            raise TypeError(f"{self.widget} is not a widget class")
        return cls

    @property
    def help_section(self) -> str:
        """The title of the pane's keys in the help."""
        return self.help_title or f"{self.title} pane"


PANES: tuple[PaneSpec, ...] = (
    PaneSpec(
        "gpu-info",
        "GPU info",
        "gpulab.app.panes.gpu_info:GpuInfoPane",
        takes=("handshake", "device_index", "runs"),
        telemetry=True,
    ),
    PaneSpec(
        "lessons",
        "Lessons",
        "gpulab.app.panes.lessons:LessonsPane",
        takes=("store", "inventory", "gpus", "device", "device_index", "runs", "runner"),
    ),
    PaneSpec(
        "exercises",
        "Exercises",
        "gpulab.app.panes.exercises:ExercisesPane",
        column="right",
        takes=("store", "inventory", "runner", "device", "waiting_for"),
    ),
    PaneSpec(
        "experiments",
        "Experiments",
        "gpulab.app.panes.experiments:ExperimentPanel",
        column="right",
        takes=(
            "inventory",
            "runner",
            "device",
            "device_index",
            "worker_status",
            "worker_line",
            "store",
        ),
        telemetry=True,
    ),
    PaneSpec(
        "memory-gauge",
        "Memory gauge",
        "gpulab.app.panes.memory_gauge:MemoryGauge",
        takes=("handshake", "memory_reading", "job_running", "gauge_gpu"),
        telemetry=True,
        help_title="Memory gauge",
    ),
)
START_PANE = "experiments"
