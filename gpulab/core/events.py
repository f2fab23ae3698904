"""The event schema shared by the worker, the client, the CLI (`--json`) and the TUI.

An event is a plain dict, so it crosses the process boundary and prints as one JSON line:
    {"type": <one of TYPES>, "job": <job id>, "t": <unix time>, ...fields}
Fields by type:
    accepted     experiment, params
    progress     fraction (0..1), message
    measurement  row (core.results.Measurement as a dict)
    memory       reading (core.memory.probe() dict)
    log          line, stream ("stdout" | "stderr" | "gpulab")
    result       result (core.results.Result as a dict)
    failed       kind, message, traceback (str, may be empty), plus kind-specific fields
    cancelled    message, how ("cooperative" | "killed")
"""

from __future__ import annotations

import time
from typing import Any

ACCEPTED = "accepted"
PROGRESS = "progress"
MEASUREMENT = "measurement"
MEMORY = "memory"
LOG = "log"
RESULT = "result"
FAILED = "failed"
CANCELLED = "cancelled"

TYPES = (ACCEPTED, PROGRESS, MEASUREMENT, MEMORY, LOG, RESULT, FAILED, CANCELLED)
FINAL = (RESULT, FAILED, CANCELLED)

# Failure kinds: a stable vocabulary the UI and tests can rely on.
KIND_BAD_PARAMS = "bad-params"
KIND_EXCEPTION = "exception"
KIND_EXPERIMENT = "experiment-error"
KIND_DOES_NOT_FIT = "does-not-fit"
KIND_OOM = "out-of-memory"
KIND_CRASHED = "worker-crashed"
KIND_ILLEGAL_ADDRESS = "illegal-address"
KIND_DEVICE_MISMATCH = "device-mismatch"
KIND_WORKER_START = "worker-start-failed"


def make(event_type: str, job: str, /, **fields: Any) -> dict[str, Any]:
    """A worker event of `event_type` for `job`, stamped with the time; ValueError for an unknown
    type."""
    # Positional-only: failure events carry a field named `kind`.
    if event_type not in TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    return {"type": event_type, "job": job, "t": time.time(), **fields}
