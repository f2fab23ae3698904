"""Placeholder GPU info pane (the telemetry engineer replaces this file)."""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.widgets import Static


class GpuInfoPane(Static):
    class Selected(Message):
        def __init__(self, index: int) -> None:
            self.index = index
            super().__init__()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("GPU info: waiting for the worker", **kwargs)

    def set_worker_info(self, handshake: dict[str, Any]) -> None:
        from gpulab.core.devices import Inventory

        self.update(Inventory.from_dict(handshake.get("inventory", {})).label())
