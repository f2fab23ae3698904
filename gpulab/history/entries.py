"""Run history that is kept: what one finished run was, in a form that outlives the session.

An *entry* is a plain dict (JSON as it is) that the store keeps whole (`Store.record_run`) and
that `gpulab history export` writes and `import` reads on another machine:

    experiment, params, status (result / failed / cancelled), source (tui / cli / import),
    host, device, versions, gpulab_version, started_at / finished_at (ISO, UTC), headline,
    verdict (pass / FAIL / -), summary, rows (the measurements), verdicts, failure,
    calibration (the cached ceilings the rows' % of peak was judged against, or a reason),
    telemetry (SM clock, temperature and power during the run, or null with the reason)

No torch, no CuPy, no textual: the CLI and the UI process both build entries here.
"""

from __future__ import annotations

import socket
import sqlite3
import statistics
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from gpulab import __version__
from gpulab.core import events as ev
from gpulab.core import peaks as pk
from gpulab.core.devices import Inventory
from gpulab.render.results import fmt_num, fmt_time, table
from gpulab.store.connection import StoreError
from gpulab.store.database import Store
from gpulab.telemetry.inventory import norm_uuid
from gpulab.telemetry.sampler import TelemetryReader

FORMAT = "gpulab-run"
TELEMETRY_FIELDS = ("sm_clock_mhz", "temperature_c", "power_w")


def _iso(t: float | None) -> str | None:
    if not t:
        return None
    return datetime.fromtimestamp(float(t), timezone.utc).isoformat(timespec="milliseconds")


def verdict_of(result: Mapping[str, Any] | None) -> str:
    """ "pass" when every verdict passed, "FAIL" when one failed, "-" without verdicts."""
    verdicts = (result or {}).get("verdicts") or []
    if not verdicts:
        return "-"
    return "pass" if all(v.get("passed") for v in verdicts) else "FAIL"


# ---- what the run was judged against, and what the GPU did meanwhile ---------------------------


def calibration_for(inventory: Mapping[str, Any] | None, device_index: int) -> dict[str, Any]:
    """The cached calibration of this run's device (and of the host), read as JSON only."""
    try:
        inv = Inventory.from_dict(dict(inventory or {}))
        gpu = pk.cached(inv, device_index) if inv.has_gpu else None
        cpu = pk.cached(inv, device_index, cpu=True)
    except Exception as exc:  # noqa: BLE001 - a broken cache is an unknown calibration
        return {"gpu": None, "cpu": None, "reason": f"cannot read the calibration: {exc}"}
    out: dict[str, Any] = {
        "gpu": None if gpu is None else gpu.to_dict(),
        "cpu": None if cpu is None else cpu.to_dict(),
    }
    if gpu is None and cpu is None:
        out["reason"] = "no calibration cached for this device (gpulab run calibrate)"
    return out


def _gpu_uuid(inventory: Mapping[str, Any] | None, device_index: int) -> str:
    for d in (inventory or {}).get("devices") or []:
        if d.get("kind") == "cuda" and d.get("index") == device_index:
            return str(d.get("uuid") or "")
    return ""


class RunWatch:
    """SM clock, temperature and power from telemetry frames taken while one run ran.

    `add` takes `telemetry.sampler.Frame`s from any thread (the TUI's sampler, the CLI's
    reader); the GPU is the one whose UUID the worker reported for the run's CUDA index.
    """

    def __init__(self, inventory: Mapping[str, Any] | None = None, device_index: int = 0) -> None:
        self.uuid = _gpu_uuid(inventory, device_index)
        self.values: dict[str, list[float]] = {f: [] for f in TELEMETRY_FIELDS}
        self.reasons: dict[str, str] = {}
        self.frames = 0
        self._lock = threading.Lock()

    def add(self, frame: Any) -> None:
        """Take one telemetry frame; a frame that cannot be read is noted, never raised."""
        try:
            self._add(frame)
        except Exception as exc:  # noqa: BLE001 - telemetry is context, never a failure
            self.reasons.setdefault("*", f"unreadable telemetry frame: {exc}")

    def _add(self, frame: Any) -> None:
        with self._lock:
            self.frames += 1
            inv = frame.inventory
            if not inv.gpus:
                self.reasons.setdefault("*", inv.reason or "NVML sees no GPU")
                return

            want = norm_uuid(self.uuid)
            gpu = next((g for g in inv.gpus if want and norm_uuid(g.uuid) == want), None)
            if gpu is None and len(inv.gpus) == 1:
                gpu = inv.gpus[0]
            if gpu is None:
                self.reasons.setdefault("*", "cannot tell which GPU ran the job")
                return
            snap = frame.snapshot(gpu.nvml_index)
            if snap is None or frame.problem(gpu.nvml_index) is not None:
                return  # a stale figure is not a reading taken during the run
            for name in TELEMETRY_FIELDS:
                value = getattr(snap, name, None)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    self.values[name].append(float(value))
                elif value is not None:
                    self.reasons.setdefault(name, str(getattr(value, "reason", value)))

    def summary(self, why_none: str = "") -> dict[str, Any]:
        """Per field {min, mean, max, samples} or null, and `reasons` for every null."""
        with self._lock:
            out: dict[str, Any] = {}
            reasons: dict[str, str] = {}
            for name, seen in self.values.items():
                if seen:
                    out[name] = {
                        "min": min(seen),
                        "mean": statistics.fmean(seen),
                        "max": max(seen),
                        "samples": len(seen),
                    }
                else:
                    out[name] = None
                    reasons[name] = (
                        self.reasons.get(name)
                        or self.reasons.get("*")
                        or why_none
                        or ("no telemetry frame arrived during the run" if not self.frames else "")
                        or "not read during the run"
                    )
            if reasons:
                out["reasons"] = reasons
            return out


def no_telemetry(reason: str) -> dict[str, Any]:
    """A telemetry summary with every field None and `reason` for each."""
    out: dict[str, Any] = {name: None for name in TELEMETRY_FIELDS}
    out["reasons"] = {name: reason for name in TELEMETRY_FIELDS}
    return out


# ---- entries ---------------------------------------------------------------------------------


def entry(
    experiment: str,
    params: Mapping[str, Any],
    final: Mapping[str, Any] | None,
    *,
    source: str,
    inventory: Mapping[str, Any] | None = None,
    device_index: int = 0,
    telemetry: Mapping[str, Any] | None = None,
    calibration: Mapping[str, Any] | None = None,
    started: float | None = None,
    ended: float | None = None,
) -> dict[str, Any]:
    """One run's entry from its final event (result, failed or cancelled)."""
    final = dict(final or {})
    status = str(final.get("type") or ev.FAILED)
    result = final.get("result") if status == ev.RESULT else None
    record = (result or {}).get("record") or {}
    inv = dict(inventory or {})
    versions = record.get("backend_versions") or {
        k: v for k, v in (inv.get("versions") or {}).items() if v
    }
    out: dict[str, Any] = {
        "format": FORMAT,
        "experiment": experiment,
        "params": dict(record.get("params") or params),
        "status": status,
        "source": source,
        "host": socket.gethostname(),
        "device": record.get("device") or device_label(inv, device_index),
        "versions": versions,
        "gpulab_version": record.get("gpulab_version") or __version__,
        "started_at": _iso(record.get("started_at") or started),
        "finished_at": _iso(record.get("finished_at") or ended or final.get("t")),
        "headline": (result or {}).get("headline") or "",
        "verdict": verdict_of(result),
        "summary": (result or {}).get("summary"),
        "rows": list((result or {}).get("measurements") or []),
        "verdicts": list((result or {}).get("verdicts") or []),
        "unavailable": dict((result or {}).get("unavailable") or {}),
        # what the panel needs to redraw the run as it was: plots, images, the explanation
        "series": list((result or {}).get("series") or []),
        "artifacts": list((result or {}).get("artifacts") or []),
        "explanation": (result or {}).get("explanation") or "",
        "lesson": (result or {}).get("lesson") or "",
        "calibration": dict(calibration or calibration_for(inv, device_index)),
        "telemetry": dict(telemetry or no_telemetry("no telemetry was read for this run")),
    }
    if status != ev.RESULT:
        out["failure"] = {
            "kind": str(final.get("kind") or final.get("how") or status),
            "message": str(final.get("message") or ""),
        }
    return out


def device_label(inventory: Mapping[str, Any], device_index: int) -> str:
    """The name of CUDA device `device_index` in the inventory, or the CPU's for a CPU run."""
    for d in inventory.get("devices") or []:
        if d.get("kind") == "cuda" and d.get("index") == device_index:
            return str(d.get("name") or f"cuda:{device_index}")
    cpu = inventory.get("cpu") or "host"
    return f"CPU ({cpu}, {inventory.get('cpu_count') or '?'} cores)"


def worth_keeping(entry_: Mapping[str, Any]) -> bool:
    """A run refused for its parameters is a typo, not a run: it is not kept."""
    return (entry_.get("failure") or {}).get("kind") != ev.KIND_BAD_PARAMS


def save(entry_: Mapping[str, Any], store: Any = None) -> int:
    """Keep an entry; raises StoreError (one line) when the database cannot be used."""
    try:
        if store is not None:
            run_id, problem = store.record_run(entry_), store.problem
        else:
            with Store() as own:
                run_id, problem = own.record_run(entry_), own.problem
    except sqlite3.Error as exc:
        raise StoreError(f"cannot keep the run in the history: {exc}") from None
    if not run_id:  # the guarded store dropped the write and said why in its notices
        raise StoreError(problem or "the history database took no new run")
    return run_id


# ---- comparing two runs ----------------------------------------------------------------------


def row_key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """A measurement row's key: (contender, size, dtype)."""
    return (str(row.get("contender", "")), str(row.get("size", "")), str(row.get("dtype", "")))


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Rows of A and B aligned by (contender, size, dtype), with B's time and rate over A's.

    `speedup` is A's median time over B's: above 1, B was faster. Rows only one side has are
    kept, with the other side empty. Different experiments are not aligned (nothing matches).
    """
    same = a.get("experiment") == b.get("experiment")
    rows_a = {row_key(r): r for r in a.get("rows") or []}
    rows_b = {row_key(r): r for r in b.get("rows") or []}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a] if same else []
    aligned = []
    for k in keys:
        ra, rb = rows_a.get(k), rows_b.get(k)
        ta = (ra or {}).get("time_median_s")
        tb = (rb or {}).get("time_median_s")
        qa = (ra or {}).get("throughput")
        qb = (rb or {}).get("throughput")
        aligned.append(
            {
                "contender": k[0],
                "size": k[1],
                "dtype": k[2],
                "a_time_s": ta,
                "b_time_s": tb,
                "speedup": ta / tb if ta and tb else None,
                "a_throughput": qa,
                "b_throughput": qb,
                "throughput_ratio": qb / qa if qa and qb else None,
                "unit": (rb or ra or {}).get("unit", ""),
            }
        )
    return {"same_experiment": same, "a": _side(a), "b": _side(b), "rows": aligned}


def _side(e: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("id", "experiment", "device", "host", "started_at", "status", "verdict", "headline")
    side = {k: e.get(k) for k in keys}
    side["params"] = e.get("params") or {}
    side["sm_clock_mhz"] = ((e.get("telemetry") or {}).get("sm_clock_mhz") or {}).get("mean")
    return side


def render_compare(c: Mapping[str, Any]) -> str:
    """A comparison of two runs as text: each run's context, then row by row."""
    lines = []
    for tag in ("a", "b"):
        s = c[tag]
        clock = f", SM {s['sm_clock_mhz']:.0f} MHz" if s.get("sm_clock_mhz") else ""
        lines.append(
            f"{tag.upper()}: #{s.get('id', '?')} {s['experiment']} on {s.get('device') or '?'}"
            f" ({s.get('host') or '?'}, {str(s.get('started_at') or '')[:16]}{clock})"
        )
        if s.get("headline"):
            lines.append(f"   {s['headline']}")
    if not c["same_experiment"]:
        lines.append("different experiments: nothing to align, only their answers compare")
        return "\n".join(lines)
    if c["a"]["params"] != c["b"]["params"]:
        lines.append(f"params differ: A {c['a']['params']}  B {c['b']['params']}")
    rows = [
        [
            r["contender"],
            r["size"],
            r["dtype"],
            fmt_time(r["a_time_s"]),
            fmt_time(r["b_time_s"]),
            "-" if r["speedup"] is None else f"{fmt_num(r['speedup'])}x",
            "-" if r["throughput_ratio"] is None else f"{fmt_num(r['throughput_ratio'])}x",
        ]
        for r in c["rows"]
    ]
    headers = ["contender", "size", "dtype", "A time", "B time", "A/B time", "B/A rate"]
    lines.append(table(headers, rows))
    lines.append("A/B time above 1: B was faster; B/A rate above 1: B did more per second")
    return "\n".join(lines)


class PolledWatch:
    """A RunWatch fed by its own NVML reader every `period` s (the CLI has no sampler)."""

    def __init__(self, period: float = 0.5) -> None:
        self.period = period
        self.watch = RunWatch()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._why = ""

    def start(self, inventory: Mapping[str, Any] | None, device_index: int) -> None:
        """Start polling telemetry for a run on `device_index` in a thread."""
        self.watch = RunWatch(inventory, device_index)
        self._thread = threading.Thread(target=self._run, name="run telemetry", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            reader = TelemetryReader()
        except Exception as exc:  # noqa: BLE001 - no NVML bindings: no telemetry, and why
            self._why = f"telemetry unavailable: {exc}"
            return
        try:
            while True:
                self.watch.add(reader.read())
                if self._stop.wait(self.period):
                    return
        except Exception as exc:  # noqa: BLE001 - no telemetry is a reason in the entry, never a lost run
            self._why = f"telemetry failed: {exc}"
        finally:
            reader.close()

    def stop(self) -> dict[str, Any]:
        """Stop polling and return the run's telemetry summary."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        return self.watch.summary(self._why)
