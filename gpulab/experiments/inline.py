"""Run an experiment in this process, emitting the same events the worker sends.

The worker uses this for each job; `gpulab bench` and tests use it directly.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from gpulab.core import events as ev
from gpulab.core import memory
from gpulab.core.devices import Inventory
from gpulab.core.errors import Cancelled
from gpulab.core.failures import classify
from gpulab.core.params import ParamError
from gpulab.experiments.base import Context
from gpulab.experiments.registry import get

Emit = Callable[[dict[str, Any]], None]


def check_device(device_index: int, inventory: Inventory) -> None:
    """A device index this machine has, or a ParamError that says which ones it has."""
    gpus = [d for d in inventory.devices if d.kind == "cuda"]
    if device_index == 0 or 0 <= device_index < len(gpus):
        return
    if not gpus:
        allowed = "0 (CPU mode: there is no GPU here)"
    else:
        allowed = f"0..{len(gpus) - 1} (this machine has {len(gpus)} GPU{'s' * (len(gpus) > 1)})"
    raise ParamError("device", device_index, allowed)


def run_job(
    job: str,
    experiment_id: str,
    raw_params: dict[str, Any],
    inventory: Inventory,
    emit: Emit,
    *,
    device_index: int = 0,
    is_cancelled: Callable[[], bool] | None = None,
    quick: bool = False,
) -> str:
    """Run one job to its end; returns the final event type (result, failed or cancelled)."""
    try:
        exp = get(experiment_id)
        params = exp.params.validate(raw_params)
        check_device(device_index, inventory)
        exp.check(params, inventory)
    except ParamError as exc:
        emit(ev.make(ev.FAILED, job, kind=ev.KIND_BAD_PARAMS, message=str(exc), traceback=""))
        return ev.FAILED
    except Exception as exc:  # noqa: BLE001 - classify() names every failure, whatever its class
        kind, message, extra = classify(exc)
        emit(ev.make(ev.FAILED, job, kind=kind, message=message, traceback="", **extra))
        return ev.FAILED
    # Before `accepted`: the worker's pre-job reading, sent on it, must not carry the last job's peak.
    memory.reset_peaks(device_index)
    emit(ev.make(ev.ACCEPTED, job, experiment=experiment_id, params=params))
    ctx = Context(
        inventory=inventory,
        device_index=device_index,
        on_progress=lambda f, m: emit(ev.make(ev.PROGRESS, job, fraction=f, message=m)),
        on_measurement=lambda r: emit(ev.make(ev.MEASUREMENT, job, row=r.to_dict())),
        on_log=lambda line: emit(ev.make(ev.LOG, job, line=line, stream="gpulab")),
        is_cancelled=is_cancelled,
        quick=quick,
    )
    try:
        result = exp.run(ctx, params)
    except Cancelled:
        emit(ev.make(ev.CANCELLED, job, message="cancelled", how="cooperative"))
        return ev.CANCELLED
    except BaseException as exc:  # noqa: BLE001 - every failure becomes an event
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        kind, message, extra = classify(exc)
        tb = traceback.format_exc()
        del exc  # drop frames that hold tensors, so OOM recovery can free them
        emit(ev.make(ev.FAILED, job, kind=kind, message=message, traceback=tb, **extra))
        return ev.FAILED
    emit(ev.make(ev.RESULT, job, result=result.to_dict()))
    return ev.RESULT
