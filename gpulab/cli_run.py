"""`gpulab run`: one experiment, headless, printing a table or one JSON line per event."""

from __future__ import annotations

import json
import sys
from typing import Any

from gpulab.report import render_result
from gpulab.runner import events as ev


def print_event(event: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(event, default=str) + "\n")
        sys.stdout.flush()
        return
    kind = event["type"]
    if kind == ev.PROGRESS:
        sys.stderr.write(f"  [{event['fraction'] * 100:5.1f}%] {event['message']}\n")
    elif kind == ev.LOG:
        sys.stderr.write(f"  | {event['line']}\n")
    elif kind == ev.RESULT:
        print(render_result(event["result"]))
    elif kind == ev.FAILED:
        sys.stderr.write(f"gpulab: {event['kind']}: {event['message']}\n")
    elif kind == ev.CANCELLED:
        sys.stderr.write(f"gpulab: cancelled ({event.get('how', '')})\n")


def exit_code(final: str, event: dict[str, Any] | None) -> int:
    if final == ev.RESULT:
        return 0
    if final == ev.FAILED and event and event.get("kind") == ev.KIND_BAD_PARAMS:
        return 2
    if final == ev.CANCELLED:
        return 130
    return 1


def run_headless(
    experiment: str, params: dict[str, Any], *, as_json: bool, device: int = 0, timeout: float = 0
) -> int:
    from gpulab.core.devices import detect
    from gpulab.runner.inline import run_job

    last: dict[str, Any] = {}

    def emit(event: dict[str, Any]) -> None:
        if event["type"] != ev.MEMORY:
            last.clear()
            last.update(event)
        print_event(event, as_json)

    final = run_job("1", experiment, params, detect(), emit, device_index=device)
    return exit_code(final, last)
