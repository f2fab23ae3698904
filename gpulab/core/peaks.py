"""This device's ceilings, measured once: the denominators of every "% of peak".

Datasheet figures are leads, not ceilings a program can reach, so gpulab measures its own:
a large device-to-device copy (GB/s, bytes read + bytes written), cuBLAS matrix products per
dtype on random data (TFLOP/s, 2 n^3 flops), and pinned host<->device copies (GB/s), through
torch when it has CUDA, else through CuPy (calibration_gpu.py). Without a GPU it calibrates the
CPU instead (calibration_cpu.py): a NumPy memory copy (out of cache: 256 MiB each way) and
NumPy matrix products.
Every figure is the best of several runs, not a median: a device shares its cores, link and
power budget with everything else running, so a median is a figure under load, not the ceiling.

A row that beats a cached ceiling by more than 5% (`judge` in judging.py, called for every row
an experiment emits) has that figure re-measured once per process (`remeasure`, here), and the
better of the two figures kept: a ceiling measured under load, or a stale one, must not leave
rows at 214% of "peak". A row still above the re-measured figure says so in its note.

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

from gpulab.core.calibration import CPU_DTYPES, CUPY_DTYPES, GPU_DTYPES, log
from gpulab.core.calibration_cpu import measure_cpu
from gpulab.core.calibration_gpu import measure_gpu, measure_gpu_cupy
from gpulab.core.datadir import resolve

SCHEMA = 1
OVER_CEILING = 1.05  # a row above 105% of its ceiling has the ceiling re-measured


def data_dir() -> Path:
    """$GPULAB_DATA_DIR, else the platform's user data dir for gpulab (created on demand)."""
    path = resolve()
    with contextlib.suppress(OSError):  # unusable (a file, read-only): the cache just misses
        path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Peaks:
    """A device's measured ceilings (copy GB/s, pinned transfers, matmul TFLOP/s per dtype),
    cached on disk by device key."""

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
        """The ceilings as JSON-ready data, with the cache's schema version."""
        out = asdict(self)
        out["schema"] = SCHEMA
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Peaks:
        """Ceilings read back from `to_dict`'s data; unknown keys are ignored."""
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
    """Where the calibration for device `key` is cached."""
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


def latest_gpu(card: str | None = None) -> Peaks | None:
    """A GPU calibration from the cache without knowing the device key (the explain card reads
    it without torch): the one measured on `card`, else the most recent GPU one; None when
    there is none. A quick (test) or CPU calibration never counts."""
    folder = data_dir() / "peaks"
    best: tuple[tuple[bool, float], Peaks] | None = None
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            p = Peaks.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if p.cpu or p.quick:
            continue
        rank = (bool(card) and p.device == card, p.measured_at)
        if best is None or rank > best[0]:
            best = (rank, p)
    return best[1] if best else None


def ready(inventory: Any, device_index: int = 0) -> bool:
    """Whether a check on this device can read every ceiling from the cache (JSON only), so a
    front end knows to calibrate at warm-up instead of inside the learner's first check."""
    peaks = cached(inventory, device_index)
    return peaks is not None and not peaks.quick and not peaks.missing()


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


# A collective's busbw is bound by the links between GPUs, not by a figure of one device: there
# is no calibrated link figure, and a check reads its busbw against the library's collective
# (NCCL, or gloo on a CPU) timed in the same rounds.
LINK = "link"
LINK_WHY = (
    "a collective is bound by the links between GPUs, not by one device's memory: read "
    "its busbw against the library's collective, timed in the same rounds"
)


def figure(what: str) -> str:
    """The canonical name of a figure: `copy`, `h2d`, `d2h`, `link` or `matmul:<dtype>`."""
    what = what.lower().replace("matmul-", "matmul:")
    if what in ("copy", "h2d", "d2h", LINK):
        return what
    return "matmul:" + what.removeprefix("matmul:")


def peak_for(peaks: Peaks | None, what: str) -> Ceiling | None:
    """`copy`, `h2d`, `d2h` (GB/s) or `matmul:<dtype>` / `<dtype>` (TFLOP/s); None if unknown."""
    if peaks is None:
        return None
    fig = figure(what)
    if fig == LINK:
        return None
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
    copy = peaks.detail.get("copy") if peaks is not None and peaks.cpu else None
    if peaks is not None and copy is not None and "threads" not in copy:
        peaks.copy_gbs = None  # a copy on one thread, by an older gpulab: below the CPU's bandwidth
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
    except Exception as exc:  # noqa: BLE001 - e.g. no room left on a GPU the experiment has filled
        for f, value in before.items():
            _set_figure(peaks, f, None if value is None else float(value))
        log(ctx, f"could not re-measure the {fig} ceiling: {type(exc).__name__}: {exc}")
        return False
    new = peak_for(peaks, fig)
    for f, old in before.items():
        now = peak_for(peaks, f)
        if old is not None and (now is None or now < old):
            _set_figure(peaks, f, float(old))  # a busier machine now: the old figure stands
    kept = peak_for(peaks, fig)
    log(
        ctx,
        f"re-measured the {fig} ceiling: {float(new or 0):.4g} (was"
        f" {float(before.get(fig) or 0):.4g}), keeping {float(kept or 0):.4g}",
    )
    _REMEASURED[key] = True
    peaks.measured_at = time.time()
    with contextlib.suppress(OSError):
        _write(peaks)
    return True


def remeasured(peaks: Peaks, what: str) -> bool:
    """Whether figure `what` of this calibration was re-measured, successfully, in this process."""
    return bool(_REMEASURED.get((str(cache_path(peaks.key)), figure(what))))


def _measure_cpu(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
    measure_cpu(peaks, todo, quick=quick, ctx=ctx)


def _measure_gpu(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
    measure_gpu(peaks, todo, quick=quick, ctx=ctx)


def _measure_gpu_cupy(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
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
