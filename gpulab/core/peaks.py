"""This device's ceilings, measured once: the denominators of every "% of peak".

Datasheet figures are leads, not ceilings a program can reach, so gpulab measures its own:
a large device-to-device copy (GB/s, bytes read + bytes written), cuBLAS matrix products per
dtype on random data (TFLOP/s, 2 n^3 flops), and pinned host<->device copies (GB/s), through
torch when it has CUDA, else through CuPy (calibration_gpu.py). Without a GPU it calibrates the
CPU instead: a NumPy memory copy (out of cache: 256 MiB each way) and NumPy matrix products.
Every figure is the best of several runs, not a median: a device shares its cores, link and
power budget with everything else running, so a median is a figure under load, not the ceiling.

A row that beats a cached ceiling by more than 5% (`judge`, called for every row an experiment
emits) has that figure re-measured once per process, and the better of the two figures kept:
a ceiling measured under load, or a stale one, must not leave rows at 214% of "peak". A row
still above the re-measured figure says so in its note.

Results are cached as JSON under the data dir, one file per device key: a GPU's UUID plus the
driver version (a new driver can change cuBLAS's kernels), or the host name plus the CPU model.
`cached()` only reads that JSON and imports neither torch nor CuPy, so the UI and lessons can
show "% of peak" without a GPU runtime in their process.
"""

from __future__ import annotations

import contextlib
import json
import platform
import re
import socket
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

GPU_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
CPU_DTYPES = ("fp64", "fp32")
CUPY_DTYPES = ("fp64", "fp32", "fp16")  # CuPy has no bf16, and its fp32 products use no TF32
SCHEMA = 1
OVER_CEILING = 1.05  # a row above 105% of its ceiling has the ceiling re-measured
CPU_MATMUL_N = 2048  # the CPU matmul ceiling is the best of 2048 and, on a fast CPU, 4096
CPU_MATMUL_MAX_N = 4096
CPU_MATMUL_STEP_S = 0.2  # ... when one product at the larger size would take under this


def data_dir() -> Path:
    """$GPULAB_DATA_DIR, else the platform's user data dir for gpulab (created on demand)."""
    from gpulab.datadir import resolve

    path = resolve()
    with contextlib.suppress(OSError):  # unusable (a file, read-only): the cache just misses
        path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Peaks:
    key: str
    device: str
    cpu: bool
    copy_gbs: float | None = None
    h2d_pinned_gbs: float | None = None
    d2h_pinned_gbs: float | None = None
    matmul_tflops: dict[str, float] = field(default_factory=dict)
    measured_at: float = 0.0
    quick: bool = False  # measured with small sizes (tests): a full calibration replaces it
    detail: dict[str, Any] = field(default_factory=dict)  # sizes used, per figure

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["schema"] = SCHEMA
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Peaks:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def missing(self) -> list[str]:
        """Figures not measured yet (what `load_or_measure` fills in)."""
        want = ["copy"] + [f"matmul:{d}" for d in (CPU_DTYPES if self.cpu else GPU_DTYPES)]
        if not self.cpu:
            want += ["h2d", "d2h"]
        return [w for w in want if peak_for(self, w) is None]


# ---------------------------------------------------------------------------- keys and cache


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "cpu"


def _gpu(inventory: Any, device_index: int) -> Any | None:
    for d in getattr(inventory, "devices", []):
        if d.kind == "cuda" and d.index == device_index:
            return d
    return None


def device_key(inventory: Any, device_index: int = 0, *, cpu: bool | None = None) -> str:
    """The cache key: GPU UUID + driver version, or host name + CPU model."""
    gpu = None if cpu else _gpu(inventory, device_index)
    if gpu is not None:
        ident = gpu.uuid or f"{gpu.name}-{device_index}"
        return f"gpu-{ident}-driver-{inventory.driver_version or 'unknown'}"
    return f"cpu-{socket.gethostname()}-{_cpu_model()}"


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key)[:180]


def cache_path(key: str) -> Path:
    return data_dir() / "peaks" / f"{_slug(key)}.json"


def _read(key: str) -> Peaks | None:
    path = cache_path(key)
    try:
        data = json.loads(path.read_text())
        peaks = Peaks.from_dict(data)
    except (OSError, ValueError, TypeError):
        return None  # missing or corrupt: measure again
    return peaks if peaks.key == key else None


def _write(peaks: Peaks) -> Path:
    path = cache_path(peaks.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(peaks.to_dict(), indent=2))
    tmp.replace(path)  # atomic: a reader never sees half a file
    return path


def cached(inventory: Any, device_index: int = 0, *, cpu: bool | None = None) -> Peaks | None:
    """The stored calibration for this device, or None. Reads JSON only (no torch, no CuPy)."""
    return _read(device_key(inventory, device_index, cpu=cpu))


class Ceiling(float):
    """A calibrated figure (a plain float to every reader) that remembers its calibration and
    its name, so a row computed from it can have it re-measured (`judge`)."""

    peaks: Peaks
    what: str

    def __new__(cls, value: float, peaks: Peaks, what: str) -> Ceiling:
        obj = super().__new__(cls, value)
        obj.peaks = peaks
        obj.what = what
        return obj

    def __reduce__(self) -> Any:  # copies and pickles as the plain number
        return (float, (float(self),))


def figure(what: str) -> str:
    """The canonical name of a figure: `copy`, `h2d`, `d2h` or `matmul:<dtype>`."""
    what = what.lower().replace("matmul-", "matmul:")
    if what in ("copy", "h2d", "d2h"):
        return what
    return "matmul:" + what.removeprefix("matmul:")


def peak_for(peaks: Peaks | None, what: str) -> Ceiling | None:
    """`copy`, `h2d`, `d2h` (GB/s) or `matmul:<dtype>` / `<dtype>` (TFLOP/s); None if unknown."""
    if peaks is None:
        return None
    fig = figure(what)
    simple = {"copy": peaks.copy_gbs, "h2d": peaks.h2d_pinned_gbs, "d2h": peaks.d2h_pinned_gbs}
    value = simple[fig] if fig in simple else peaks.matmul_tflops.get(fig.removeprefix("matmul:"))
    return Ceiling(float(value), peaks, fig) if value else None


def _set_figure(peaks: Peaks, fig: str, value: float | None) -> None:
    if fig == "copy":
        peaks.copy_gbs = value
    elif fig == "h2d":
        peaks.h2d_pinned_gbs = value
    elif fig == "d2h":
        peaks.d2h_pinned_gbs = value
    elif value is None:
        peaks.matmul_tflops.pop(fig.removeprefix("matmul:"), None)
    else:
        peaks.matmul_tflops[fig.removeprefix("matmul:")] = value


# ---------------------------------------------------------------------------- measuring


def load_or_measure(
    ctx: Any, *, remeasure: bool = False, quick: bool = False, cpu: bool | None = None
) -> Peaks:
    """The calibration for ctx's device (or the CPU when `cpu` or no GPU), measuring what is missing.

    A GPU calibration takes a few seconds (a quick one well under a second); the result is cached.
    """
    use_cpu = bool(cpu) or not (ctx.has_cuda or ctx.has_cupy)
    inventory = ctx.inventory
    key = device_key(inventory, ctx.device_index, cpu=use_cpu)
    peaks = None if remeasure else _read(key)
    if peaks is not None and peaks.quick and not quick:
        peaks = None  # a test-sized calibration is not good enough for real figures
    if peaks is None:
        gpu = None if use_cpu else _gpu(inventory, ctx.device_index)
        name = gpu.name if gpu is not None else f"CPU {_cpu_model()}"
        peaks = Peaks(key=key, device=name, cpu=use_cpu, quick=quick)
    todo = peaks.missing()
    if not use_cpu and not ctx.has_cuda:
        # CuPy alone: no bf16 and no TF32 switch; torch with CUDA fills them in later.
        todo = [w for w in todo if not w.startswith("matmul:") or w[7:] in CUPY_DTYPES]
    if not todo:
        return peaks
    _measure(peaks, todo, quick=quick, ctx=ctx)
    peaks.measured_at = time.time()
    with contextlib.suppress(OSError):  # a read-only data dir still gets its numbers
        _write(peaks)
    return peaks


def _measure(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
    if peaks.cpu:
        _measure_cpu(peaks, todo, quick=quick, ctx=ctx)
    elif ctx.has_cuda:
        _measure_gpu(peaks, todo, quick=quick, ctx=ctx)
    else:
        _measure_gpu_cupy(peaks, todo, quick=quick, ctx=ctx)


_REMEASURED: dict[tuple[str, str], bool] = {}  # (cache file, figure) -> it was re-measured


def _figures(peaks: Peaks) -> dict[str, float | None]:
    names = ["copy", "h2d", "d2h"] + [f"matmul:{d}" for d in peaks.matmul_tflops]
    return {f: peak_for(peaks, f) for f in names}


def remeasure(ctx: Any, peaks: Peaks, what: str) -> bool:
    """Measure one figure again (once per figure, cache file and process) and keep, for it and
    any figure measured with it, the better of the old and the new value; True when it
    measured. The cache is rewritten."""
    fig = figure(what)
    key = (str(cache_path(peaks.key)), fig)
    if key in _REMEASURED:
        return False
    _REMEASURED[key] = False
    before = _figures(peaks)
    try:
        _measure(peaks, [fig], quick=peaks.quick, ctx=ctx)
    except Exception as exc:  # e.g. no room left on a GPU the experiment has filled
        for f, value in before.items():
            _set_figure(peaks, f, None if value is None else float(value))
        _log(ctx, f"could not re-measure the {fig} ceiling: {type(exc).__name__}: {exc}")
        return False
    new = peak_for(peaks, fig)
    for f, old in before.items():
        now = peak_for(peaks, f)
        if old is not None and (now is None or now < old):
            _set_figure(peaks, f, float(old))  # a busier machine now: the old figure stands
    kept = peak_for(peaks, fig)
    _log(
        ctx,
        f"re-measured the {fig} ceiling: {float(new or 0):.4g} (was"
        f" {float(before.get(fig) or 0):.4g}), keeping {float(kept or 0):.4g}",
    )
    _REMEASURED[key] = True
    peaks.measured_at = time.time()
    with contextlib.suppress(OSError):
        _write(peaks)
    return True


def judge(ctx: Any, m: Any) -> None:
    """Set row `m`'s % of peak from its ceiling's current figure (see `Ceiling`).

    When the row beats the ceiling by more than OVER_CEILING, the ceiling is re-measured
    (`remeasure`, once per figure and process) and the row judged again; a row still above it
    keeps its honest percentage and says so in its note (`settle`).
    """
    ceiling = getattr(m, "_ceiling", None)
    if not isinstance(ceiling, Ceiling) or not m.throughput:
        return
    live = peak_for(ceiling.peaks, ceiling.what)
    if not live:
        return
    if 100.0 * m.throughput / live > 100.0 * OVER_CEILING and remeasure(
        ctx, ceiling.peaks, ceiling.what
    ):
        m.extra["ceiling_remeasured"] = True
    settle(m)


def settle(m: Any) -> bool:
    """Judge row `m` against the current figure of its ceiling: its % of peak, the figure used
    (`extra["ceiling"]`), and a note on any row above 100%. True when the figure differs from
    the one the row was last judged against (a re-measure happened since)."""
    ceiling = getattr(m, "_ceiling", None)
    if not isinstance(ceiling, Ceiling) or not m.throughput:
        return False
    live = peak_for(ceiling.peaks, ceiling.what)
    if not live:
        return False
    before = m.extra.get("ceiling")
    changed = before is not None and abs(float(before) - float(live)) > 1e-9 * float(live)
    pct = 100.0 * m.throughput / live
    m.percent_of_peak = pct
    m.extra["ceiling"] = float(live)
    m.extra["ceiling_figure"] = ceiling.what
    old_note = m.extra.pop("ceiling_note", "")
    if old_note:  # judged before against another figure: that note no longer holds
        m.note = m.note.replace(f"; {old_note}", "").replace(old_note, "")
    why = _over_note(pct, ceiling)
    if why:
        m.extra["ceiling_note"] = why
        m.note = f"{m.note}; {why}" if m.note else why
    return changed


def _over_note(pct: float, ceiling: Ceiling) -> str:
    """Why a row is above 100% of its ceiling ('' when it is not)."""
    if pct <= 100.0:
        return ""
    if pct <= 100.0 * OVER_CEILING:
        return (
            f"{pct:.0f}% of the calibrated {ceiling.what} ceiling: within the 5% that two "
            "measurements of the same figure differ by (clocks, the link, the load); a ceiling "
            "is re-measured only when a row beats it by more"
        )
    done = _REMEASURED.get((str(cache_path(ceiling.peaks.key)), ceiling.what))
    how = (
        "even after re-measuring it: this row's workload beats the calibration's own"
        if done
        else "and it could not be re-measured: re-calibrate (gpulab run calibrate)"
    )
    return f"{pct:.0f}% of the calibrated {ceiling.what} ceiling {how}"


def rejudge(result: Any) -> dict[str, dict[str, float]]:
    """Judge every row of a finished run again against its ceiling's final figure (one
    denominator per table), and record in the result which figures were re-measured during the
    run: {figure: {"was": first figure the run used, "now": final}}."""
    changed: dict[str, dict[str, float]] = {}
    for m in result.measurements:
        before = m.extra.get("ceiling")
        if settle(m) and before is not None:
            fig = m.extra["ceiling_figure"]
            entry = changed.setdefault(fig, {"was": float(before), "now": m.extra["ceiling"]})
            entry["was"] = min(entry["was"], float(before))
            m.extra["rejudged"] = True
    if changed:
        result.summary["ceilings_remeasured"] = changed
        figs = ", ".join(
            f"{f} {v['was']:.4g} -> {v['now']:.4g}" for f, v in sorted(changed.items())
        )
        text = (
            f" A ceiling was re-measured during this run ({figs}): every row was judged "
            "again against the final figure, so one figure is the denominator of each table."
        )
        result.explanation = (result.explanation or "") + text
    return changed


SUSTAINED_MIN_CALL_S = 5e-4


def sustained_kw(
    fn: Any, sync: Any, seconds: float = 0.5, *, min_call_s: float = SUSTAINED_MIN_CALL_S
) -> dict[str, Any]:
    """Run `fn` back to back for about `seconds` (untimed) and return Timer.measure kwargs.

    A long compute-bound kernel runs faster in short bursts than under sustained load (clocks
    drop to the power limit within a fraction of a second: an 8192 bf16 matmul on an H200 ran
    at 794 TFLOP/s in single timed calls and 681 back to back). So ops of `min_call_s` (0.5 ms)
    or more are timed in the steady state, `inner` calls back to back per sample, like
    torch.utils.benchmark; shorter ops stay single calls (empty kwargs), where launch latency
    is the lesson. `min_call_s=0` forces the steady state: for rows compared with each other or
    with the calibration, which must all be timed the same way.
    """
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(4):
            fn()
        sync()  # keep the queue shallow: the host would otherwise run far ahead
        calls += 4
    per_call = (time.perf_counter() - t0) / calls
    if per_call < min_call_s:
        return {}
    return {"inner": max(1, min(50, round(0.03 / per_call))), "warmup": 0, "cold": False}


def _log(ctx: Any, message: str) -> None:
    if ctx is not None and hasattr(ctx, "log"):
        ctx.log(message)


def _measure_cpu(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
    import numpy as np

    from gpulab.core.timing import Timer

    # The best of several runs: the ceiling is what this CPU can do, not what it did while
    # sharing its cores (a median under load left NumPy rows at 214% of "peak").
    timer = Timer(warmup=1, repeats=5 if quick else 10, budget_s=0.3 if quick else 1.5, min_runs=5)
    timer.cancel_check = getattr(ctx, "check_cancelled", None) or timer.cancel_check  # issue 12
    rng = np.random.default_rng(0)
    if "copy" in todo:
        n = (8 if quick else 256) * 2**20 // 4
        src = np.empty(n, dtype=np.float32)
        dst = np.empty_like(src)
        for i in range(0, n, 1 << 21):  # 2M at a time, a cancel taken between (issue 12)
            timer.cancel_check()
            rng.random(out=src[i : i + (1 << 21)], dtype=np.float32)
            dst[i : i + (1 << 21)] = 0.0  # its pages faulted in here, not in the first copy
        t = timer.measure(lambda: np.copyto(dst, src), cold=False)
        peaks.copy_gbs = 2 * src.nbytes / t.min_s / 1e9
        peaks.detail["copy"] = {
            "bytes": 2 * src.nbytes,
            "counted": "read + written",
            "statistic": f"best of {t.runs} runs",
            "min_s": t.min_s,
            "median_s": t.median_s,
        }
        _log(ctx, f"CPU memory copy: {peaks.copy_gbs:.1f} GB/s")
    for dtype in CPU_DTYPES:
        if f"matmul:{dtype}" not in todo:
            continue
        npd = np.float64 if dtype == "fp64" else np.float32
        first = n = 256 if quick else CPU_MATMUL_N
        while True:
            a = rng.standard_normal((n, n)).astype(npd)
            b = rng.standard_normal((n, n)).astype(npd)
            t = timer.measure(lambda a=a, b=b: a @ b, cold=False)
            tflops = 2 * n**3 / t.min_s / 1e12
            if tflops > peaks.matmul_tflops.get(dtype, 0.0) or n == first:
                peaks.matmul_tflops[dtype] = tflops
                peaks.detail[f"matmul:{dtype}"] = {
                    "n": n,
                    "library": f"NumPy {np.__version__}",
                    "statistic": f"best of {t.runs} runs",
                    "min_s": t.min_s,
                    "median_s": t.median_s,
                }
            # A fast CPU's BLAS is still climbing at 2048 (an H100 host's NumPy ran 8192 at
            # 110% of a 2048 calibration): take 4096 too when it costs well under a second.
            if quick or n >= CPU_MATMUL_MAX_N or t.min_s * 8 > CPU_MATMUL_STEP_S:
                break
            n *= 2
        _log(ctx, f"NumPy matmul {dtype}: {peaks.matmul_tflops[dtype] * 1e3:.1f} GFLOP/s")


def _measure_gpu(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
    from gpulab.core.calibration_gpu import measure_gpu

    measure_gpu(peaks, todo, quick=quick, ctx=ctx)


def _measure_gpu_cupy(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
    from gpulab.core.calibration_gpu import measure_gpu_cupy

    measure_gpu_cupy(peaks, todo, quick=quick, ctx=ctx)


def summary_rows(peaks: Peaks) -> list[tuple[str, float, str]]:
    """(figure, value, unit) for display."""
    rows: list[tuple[str, float, str]] = []
    label = (
        "memory copy (read + written)" if peaks.cpu else "device-to-device copy (read + written)"
    )
    if peaks.copy_gbs:
        rows.append((label, peaks.copy_gbs, "GB/s"))
    if peaks.h2d_pinned_gbs:
        rows.append(("host to device, pinned", peaks.h2d_pinned_gbs, "GB/s"))
    if peaks.d2h_pinned_gbs:
        rows.append(("device to host, pinned", peaks.d2h_pinned_gbs, "GB/s"))
    for dtype, value in peaks.matmul_tflops.items():
        rows.append((f"matmul {dtype}", value, "TFLOP/s"))
    return rows
