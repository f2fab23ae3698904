"""Placeholder lesson browser (the lessons engineer replaces this file)."""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.widgets import Static


class LessonsPane(Static):
    class RunExperiment(Message):
        def __init__(self, experiment: str, params: dict[str, Any]) -> None:
            self.experiment = experiment
            self.params = params
            super().__init__()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("Lessons", **kwargs)
