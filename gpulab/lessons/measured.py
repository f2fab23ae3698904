"""Figures measured on this machine, for a lesson's {{measured:KEY}} placeholders.

Sources, all read without a GPU runtime in this process (the app never imports torch):
- the calibration cache of `gpulab.core.peaks` (JSON under the data dir): copy and pinned
  transfer bandwidth, matmul TFLOP/s per dtype, and the CPU's copy and matmul figures;
- an inventory when the caller has one: `core.devices.Inventory` (the worker's handshake) or
  the telemetry `SystemInventory` (NVML): GPU name, SMs, memory, L2, compute capability;
- finished `bandwidth` runs (`runs`): the app's runs this session and the progress store's run
  history; the newest one that copied at least `PAGEABLE_MIN_BYTES` gives the pageable H2D
  figure (calibration measures pinned copies only);
- `extra`: anything else a caller measured.

An unknown figure becomes a sentence saying how to get it, with a link to the experiment that
measures it, never a blank or a made-up number.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpulab.core import peaks as peaks_mod
from gpulab.core.datadir import resolve
from gpulab.experiments.registry import get

_INFO = "not known yet: see the GPU info pane"
# Markdown links: the lesson viewer turns them into Run links like the lesson's own.
_CALIBRATE = "not measured yet: [run the calibrate experiment](experiment:calibrate)"
_CALIBRATE_CPU = (
    "not measured yet: [run the calibrate experiment with cpu=true](experiment:calibrate?cpu=true)"
)
_BANDWIDTH = "not measured yet: [run the bandwidth experiment](experiment:bandwidth)"

# A pageable figure from a sweep that stopped at small copies would show the fixed per-copy
# cost, not the rate: only runs whose largest copy is at least this big count.
PAGEABLE_MIN_BYTES = 64 * 2**20

KEYS: dict[str, tuple[str, str]] = {
    # key: (unit, fallback)
    "gpu_name": ("", _INFO),
    "sm_count": ("", _INFO),
    "memory_total_gib": ("GiB", _INFO),
    "l2_mib": ("MiB", _INFO),
    "compute_capability": ("", _INFO),
    "copy_gbs": ("GB/s", _CALIBRATE),
    "h2d_pinned_gbs": ("GB/s", _CALIBRATE),
    "d2h_pinned_gbs": ("GB/s", _CALIBRATE),
    # only the bandwidth experiment measures pageable copies (see from_runs)
    "h2d_pageable_gbs": ("GB/s", _BANDWIDTH),
    "matmul_tflops_fp32": ("TFLOP/s", _CALIBRATE),
    "matmul_tflops_tf32": ("TFLOP/s", _CALIBRATE),
    "matmul_tflops_fp16": ("TFLOP/s", _CALIBRATE),
    "matmul_tflops_bf16": ("TFLOP/s", _CALIBRATE),
    "matmul_tflops_fp64": ("TFLOP/s", _CALIBRATE),
    "cpu_copy_gbs": ("GB/s", _CALIBRATE_CPU),
    "cpu_matmul_gflops": ("GFLOP/s", _CALIBRATE_CPU),
}


def fallback(key: str) -> str:
    """What a lesson shows for a figure not measured yet."""
    if key in KEYS:
        return f"({KEYS[key][1]})"
    return "(not a known measurement)"


def format_value(key: str, value: Any) -> str:
    """A measured figure with its unit, or the fallback."""
    unit = KEYS.get(key, ("", ""))[0]
    if isinstance(value, bool) or value is None:
        return fallback(key)
    if isinstance(value, int | float):
        if key == "memory_total_gib":  # as the panes write it (telemetry.values.gib)
            text = f"{value:.1f}"
        elif key == "sm_count" or float(value).is_integer():
            text = f"{int(value):,}"
        elif abs(value) >= 100:
            text = f"{value:,.0f}"
        else:
            text = f"{value:.1f}"
    else:
        text = str(value)
    return f"{text} {unit}" if unit else text


class Measured:
    """KEY -> display text; call it like a function to fill a lesson."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self.values: dict[str, Any] = {k: v for k, v in (values or {}).items() if v is not None}

    def __call__(self, key: str) -> str:
        if key in self.values:
            return format_value(key, self.values[key])
        return fallback(key)

    def known(self) -> set[str]:
        """The keys that have a measured value."""
        return set(self.values)

    @classmethod
    def collect(
        cls,
        inventory: Any = None,
        *,
        telemetry: Any = None,
        device_index: int = 0,
        runs: Iterable[Any] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> Measured:
        """Everything known now. Never raises: a broken cache is the same as no cache.

        `inventory`: the worker's `core.devices.Inventory` (or its dict); `telemetry`: the
        NVML `SystemInventory`. Where both know a figure, the worker's wins. `runs`: finished
        runs, newest first (see `from_runs`).
        """
        values: dict[str, Any] = {}
        # A corrupt cache or a half-filled inventory must not break the lesson view.
        with contextlib.suppress(Exception):
            values.update(_from_peaks(inventory, device_index))
        for source in (telemetry, inventory):  # the inventories are the authority on the GPU
            with contextlib.suppress(Exception):
                values.update(_from_inventory(source, device_index))
        with contextlib.suppress(Exception):
            # Except the memory size: the card's figure (NVML's), as every pane shows it; the
            # worker's (CUDA's) is smaller by the driver's reserve.
            card = _from_inventory(telemetry, device_index).get("memory_total_gib")
            if card:
                values["memory_total_gib"] = card
        with contextlib.suppress(Exception):
            values.update(from_runs(runs))
        values.update(extra or {})
        return cls(values)


def _attr(obj: Any, name: str) -> Any:
    value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
    # telemetry's NA objects stand for "unknown, and why": unknown here
    return None if type(value).__name__ == "NA" else value


def _from_inventory(inventory: Any, device_index: int) -> dict[str, Any]:
    if inventory is None:
        return {}
    out: dict[str, Any] = {}
    devices = _attr(inventory, "devices")
    if devices:  # core.devices.Inventory (or its to_dict())
        for d in devices:
            if _attr(d, "kind") == "cuda" and _attr(d, "index") == device_index:
                out["gpu_name"] = _attr(d, "name") or None
                out["sm_count"] = _attr(d, "multiprocessors") or None
                total = _attr(d, "memory_total")
                out["memory_total_gib"] = total / 2**30 if total else None
                out["compute_capability"] = _attr(d, "compute_capability") or None
    gpus = _attr(inventory, "gpus")
    if gpus:  # telemetry.inventory.SystemInventory
        g = next((g for g in gpus if _attr(g, "cuda_index") == device_index), gpus[0])
        out.setdefault("gpu_name", _attr(g, "name"))
        out.setdefault("compute_capability", _attr(g, "compute_capability"))
        if out.get("sm_count") is None:
            out["sm_count"] = _attr(g, "sm_count")
        if out.get("memory_total_gib") is None and _attr(g, "memory_total"):
            out["memory_total_gib"] = _attr(g, "memory_total") / 2**30
        if _attr(g, "l2_cache"):
            out["l2_mib"] = _attr(g, "l2_cache") / 2**20
    return {k: v for k, v in out.items() if v not in (None, "")}


def _peaks_dir() -> Path | None:
    path = resolve() / "peaks"
    return path if path.is_dir() else None


def _all_cached() -> list[dict[str, Any]]:
    """Every calibration file, as plain dicts (the same JSON `core.peaks` writes)."""
    folder = _peaks_dir()
    if folder is None:
        return []
    found = []
    for path in folder.glob("*.json"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def _from_peaks(inventory: Any, device_index: int) -> dict[str, Any]:
    gpu: dict[str, Any] | None = None
    if inventory is not None and _attr(inventory, "devices") is not None:
        inv = inventory
        if isinstance(inventory, Mapping):  # Inventory.to_dict(): attribute access for device_key
            devices = [SimpleNamespace(**d) for d in inventory.get("devices") or []]
            inv = SimpleNamespace(devices=devices, driver_version=inventory.get("driver_version"))
        p = peaks_mod.cached(inv, device_index)
        gpu = p.to_dict() if p is not None and not p.cpu else None
    everything = _all_cached()
    # Without an inventory we cannot know which GPU this is; the newest full calibration of a
    # GPU is the best guess (one GPU per box is the common case), a quick one only if alone.
    if gpu is None:
        gpus = [d for d in everything if not d.get("cpu")]
        gpus.sort(key=lambda d: (not d.get("quick"), d.get("measured_at") or 0))
        gpu = gpus[-1] if gpus else None
    cpus = [d for d in everything if d.get("cpu")]
    cpus.sort(key=lambda d: (not d.get("quick"), d.get("measured_at") or 0))
    cpu = cpus[-1] if cpus else None

    out: dict[str, Any] = {}
    if gpu:
        out["copy_gbs"] = gpu.get("copy_gbs")
        out["h2d_pinned_gbs"] = gpu.get("h2d_pinned_gbs")
        out["d2h_pinned_gbs"] = gpu.get("d2h_pinned_gbs")
        for dtype, tflops in (gpu.get("matmul_tflops") or {}).items():
            out[f"matmul_tflops_{dtype}"] = tflops
        if gpu.get("device"):
            out.setdefault("gpu_name", gpu["device"])
    if cpu:
        out["cpu_copy_gbs"] = cpu.get("copy_gbs")
        tflops = (cpu.get("matmul_tflops") or {}).get("fp32")
        out["cpu_matmul_gflops"] = tflops * 1e3 if tflops else None
    return {k: v for k, v in out.items() if isinstance(v, int | float | str) and v}


# ---- finished runs -------------------------------------------------------------------------


def from_runs(runs: Iterable[Any]) -> dict[str, Any]:
    """Figures from finished runs, newest first; today the pageable H2D rate of `bandwidth`.

    A run is the app's `RunState` (experiment, status, params, result), the store's `RunRow`
    (experiment, final_type, params, summary: the result's summary or the whole result), or a
    dict with those keys. Runs that failed, were cancelled, are still going, or did not copy
    at least PAGEABLE_MIN_BYTES are skipped.
    """
    for run in runs:
        gbs = _pageable_gbs(run)
        if gbs is not None:
            return {"h2d_pageable_gbs": gbs}
    return {}


def _pageable_gbs(run: Any) -> float | None:
    if _attr(run, "experiment") != "bandwidth":
        return None
    status = _attr(run, "status") or _attr(run, "final_type")
    if status != "result":
        return None
    result = _attr(run, "result")
    if not isinstance(result, Mapping):
        result = _attr(run, "summary")
    if not isinstance(result, Mapping):
        return None
    raw_summary, raw_record = result.get("summary"), result.get("record")
    summary: Mapping[str, Any] = raw_summary if isinstance(raw_summary, Mapping) else result
    record: Mapping[str, Any] = raw_record if isinstance(raw_record, Mapping) else {}
    params = _attr(run, "params") or record.get("params") or {}
    largest = _bytes(params.get("max_size", 2**30))  # the experiment's default sweep: 1 GiB
    if largest is None or largest < PAGEABLE_MIN_BYTES:
        return None
    gbs = (summary.get("largest_size_gbs") or {}).get("h2d-pageable")
    if isinstance(gbs, bool) or not isinstance(gbs, int | float) or not gbs > 0:
        return None
    return float(gbs)


def _bytes(value: Any) -> float | None:
    """A size as the run kept it: parsed (an int) or as typed ("1Gi", "64Mi")."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        pass
    try:
        return float(get("bandwidth").params.get("max_size").parse(str(value)))
    except Exception:  # noqa: BLE001 - an unreadable size is an unusable run, not an error
        return None
