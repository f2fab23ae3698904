"""The progress store as the TUI opens it: an unusable data dir is a notice, not a crash."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpulab.store.connection import StoreError
from gpulab.store.database import Store


def open_store(app: Any, on_notice: Callable[[str], None] | None = None) -> Store:
    """The store under the data dir; if it cannot be opened, an in-memory one (reading, quizzes
    and exercises still work; nothing is kept past this session) and a warning that says so."""
    try:
        return Store(on_notice=on_notice)
    except StoreError as exc:
        app.notify(
            f"{exc}. Progress is kept only until gpulab exits.",
            title="Progress not saved",
            severity="warning",
            timeout=10,
        )
        return Store(":memory:")
