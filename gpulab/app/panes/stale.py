"""What a telemetry pane says when its figures are not new, so it never freezes silently.

Two sources: the sampler's own marks on a frame (`Frame.stale` when reads keep failing,
`Frame.lost` for a GPU that fell off the bus), and a watchdog for a sampler thread that has
gone quiet without saying why (it died, or its frames stopped reaching us): no frame for
QUIET_PERIODS sampling periods (at least QUIET_MIN_S) reads "stale since <last frame>".
The watchdog is a timer every WATCH_S seconds that compares two numbers: nothing to see idle.
"""

from __future__ import annotations

import time
from typing import Any

from gpulab.telemetry.sampler import Frame, Sampler, Stale

WATCH_S = 2.5
QUIET_PERIODS = 4
QUIET_MIN_S = 5.0


class StaleWatch:
    """Decides when a telemetry pane's figures are stale and why."""

    def __init__(self) -> None:
        self.frame_at = time.monotonic()
        self.frame_wall = time.time()
        self.quiet: Stale | None = None

    def saw_frame(self) -> None:
        """A frame arrived: the figures are current again."""
        self.frame_at, self.frame_wall = time.monotonic(), time.time()
        self.quiet = None

    def check(self, sampler: Sampler) -> bool:
        """True when the watchdog has just decided the figures are stale."""
        if sampler.manual or self.quiet is not None:
            return False
        limit = max(QUIET_MIN_S, QUIET_PERIODS * sampler.interval)
        if time.monotonic() - self.frame_at <= limit:
            return False
        if sampler.failing is not None:
            self.quiet = sampler.failing
        elif not sampler.running:
            self.quiet = Stale(self.frame_wall, "the telemetry thread stopped")
        else:
            self.quiet = Stale(self.frame_wall, "no new reading from the telemetry thread")
        return True

    def problems(self, frame: Frame | None) -> list[tuple[int | None, Stale]]:
        """(NVML index or None for every GPU, why) for each thing that is not current."""
        if self.quiet is not None:
            return [(None, self.quiet)]
        if frame is None:
            return []
        if frame.stale is not None:
            return [(None, frame.stale)]
        return sorted(frame.lost.items())

    def problem(self, frame: Frame | None, nvml_index: int) -> Stale | None:
        """Why GPU `nvml_index`'s figures are not current, or None when they are."""
        for index, why in self.problems(frame):
            if index is None or index == nvml_index:
                return why
        return None


def marker(why: Stale, gpu: Any = None) -> str:
    """One line: "⚠ GPU cuda:0 stale since 12:34:56: GPU lost: ..." (no GPU: all of them)."""
    head = f"GPU {gpu} " if gpu is not None else ""
    return f"⚠ {head}{why.label()}"
