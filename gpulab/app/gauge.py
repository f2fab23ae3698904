"""Calls into the memory gauge that tolerate a gauge without that method (its owner adds it)."""

from __future__ import annotations

from typing import Any


def gauge_call(app: Any, method: str, *args: Any) -> None:
    try:
        gauge = app.screen_stack[0].query_one("#memory-gauge")
    except Exception:  # noqa: BLE001 - not mounted yet, or no gauge on this screen
        return
    fn = getattr(gauge, method, None)
    if callable(fn):
        fn(*args)
