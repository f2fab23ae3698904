"""Placeholder memory gauge (the telemetry engineer replaces this file)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static


class MemoryGauge(Static):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("Memory: no readings yet", **kwargs)

    def set_worker_pid(self, pid: int | None) -> None:
        pass

    def add_reading(self, reading: dict[str, Any]) -> None:
        pass

    def job_started(self) -> None:
        pass

    def job_finished(self) -> None:
        pass
