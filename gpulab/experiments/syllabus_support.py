"""Helpers the syllabus experiments share: peaks, rows, device plumbing, memory fits.

The checks against references (tolerances, relative errors, verdicts) are in verification.py,
re-exported here because every experiment calls them as sup.X.

Nothing here imports torch or CuPy at module level (the registry loads in the UI process).
"""

from __future__ import annotations

from typing import Any

from gpulab.core import peaks as peaks_mod
from gpulab.core.errors import Cancelled
from gpulab.core.hostmem import host_available_bytes as available
from gpulab.core.peaks import peak_for
from gpulab.core.results import Measurement, Result
from gpulab.core.timing import sustained_kw
from gpulab.experiments.base import Context, DoesNotFit

# Room for what the fit estimates do not count element by element: the verification blocks,
# cuBLAS / cuDNN workspaces and the allocators' rounding.
SLACK_BYTES = 512 * 2**20
HOST_SLACK_BYTES = 256 * 2**20


class Ceilings:
    """The device's calibration plus, on a GPU machine, the host's (when already measured).

    Rows run on the CPU of a GPU machine get "% of peak" only from a cached CPU calibration
    (`gpulab bench` makes one); measuring it here would slow every GPU run by seconds.
    """

    def __init__(self, main: Any, host: Any | None = None) -> None:
        self.main = main
        self.host = host if host is not None else (main if main.cpu else None)

    @property
    def cpu(self) -> bool:
        """True when the main ceilings are the CPU's."""
        return bool(self.main.cpu)

    @property
    def copy_gbs(self) -> float | None:
        """The main device's copy bandwidth, GB/s."""
        return self.main.copy_gbs


def peaks(ctx: Context) -> Ceilings | None:
    """This device's calibration (measured once and cached), or None when it cannot be had."""
    ctx.progress(0.0, "this device's calibration (measured once, then cached)")
    try:
        main = peaks_mod.load_or_measure(ctx, quick=ctx.quick)
        host = None
        if not main.cpu:
            host = peaks_mod.cached(ctx.inventory, ctx.device_index, cpu=True)
        return Ceilings(main, host)
    except Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - a calibration failure must not sink the experiment
        ctx.log(f"no calibration for % of peak: {type(exc).__name__}: {exc}")
        return None


def peak(p: Ceilings | None, what: str) -> float | None:
    """A figure of the device's own calibration (the GPU's on a GPU machine)."""
    if p is None:
        return None

    return peak_for(p.main, what)


def peak_here(p: Ceilings | None, backend: str, what: str) -> float | None:
    """The ceiling for a row run on `backend`: the GPU's for GPU rows, the host's for CPU rows.

    The host calibration is NumPy's (a copy, the better of one thread and every core; NumPy's
    BLAS for matmuls), so only NumPy (and SciPy) rows are judged against it: PyTorch's CPU ops
    run their own kernels, and against NumPy's figures their matmuls stood above 100% (and,
    before the copy used every core, several hundred percent of a one-thread copy "peak").
    """
    if p is None:
        return None

    on_gpu = backend in ("torch-cuda", "cupy")
    if on_gpu:
        return None if p.cpu else peak_for(p.main, what)
    if backend not in ("numpy", "scipy"):
        return None
    return peak_for(p.host, what) if p.host is not None else None


def emit(ctx: Context, result: Result, m: Measurement) -> Measurement:
    """Send the row to the UI and keep it in the result; the row."""
    ctx.measurement(m)
    result.measurements.append(m)
    return m


def sync_kind(backend: str) -> str:
    """How the timer synchronises for a backend: torch, cupy or none."""
    return {"torch-cuda": "torch", "cupy": "cupy"}.get(backend, "none")


def device_sync(backend: str) -> Any:
    """The host-blocking synchronize for `backend`'s device, or None for CPU backends."""
    kind = sync_kind(backend)
    if kind == "torch":
        import torch

        return torch.cuda.synchronize
    if kind == "cupy":
        import cupy

        return cupy.cuda.Device().synchronize
    return None


def sustained(ctx: Context, fn: Any, backend: str, *, always: bool = False) -> dict[str, Any]:
    """Timer.measure kwargs for a GPU matmul, timed the way the calibration times its own.

    Runs `fn` back to back for 0.5 s (0.1 s in quick mode) untimed, then returns the sustained
    regime's kwargs (`inner` calls per sample, no cold call) when a call takes 0.5 ms or more,
    or always with `always` (rows compared with each other or with the calibrated peak, which
    must all be timed alike). Shorter calls and CPU rows get {}: single calls, as before.
    """
    sync = device_sync(backend)
    if sync is None:
        return {}

    kw = sustained_kw(fn, sync, 0.1 if ctx.quick else 0.5, min_call_s=0.0 if always else 5e-4)
    ctx.check_cancelled()
    return kw


def regime(kw: dict[str, Any]) -> str:
    """How a row was timed, for its `regime` column: what `sustained` chose."""
    if kw.get("inner"):
        return f"sustained: {kw['inner']} back-to-back calls per sample, after an untimed warm-up"
    return "single calls"


def todo(exp: Any, result: Result, ids: tuple[str, ...] | None = None) -> list[Any]:
    """The contenders that can run here (optionally only those named), in declared order."""
    return [
        c for c in exp.contenders if c.id not in result.unavailable and (ids is None or c.id in ids)
    ]


def size_label(nbytes: float) -> str:
    """A byte count as B, KiB, MiB or GiB: whole numbers bare, others to one decimal."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= factor:
            value = nbytes / factor
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{int(nbytes)} B"


def torch_dtype(name: str) -> Any:
    """The torch dtype for a dtype name (fp64, fp32, tf32, bf16, fp16, ...)."""
    import torch

    return {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
    }[name]


class tf32_mode:  # noqa: N801 - used as a context manager
    """Turn TF32 matmuls on (for the tf32 rows) or off, and restore the setting on exit."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        import torch

        self.saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.on

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = self.saved


def free_device_memory(ctx: Context) -> tuple[int, int] | None:
    """(free, total) bytes on ctx's GPU, or None without one.

    Through torch when it has CUDA, else through CuPy (a CUDA machine with a CPU-only torch)."""
    if ctx.has_cuda:
        import torch

        free, total = torch.cuda.mem_get_info(ctx.device_index)
        return int(free), int(total)
    if ctx.has_cupy:
        import cupy

        with cupy.cuda.Device(ctx.device_index):
            free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)
    return None


def fmt_bytes(nbytes: float) -> str:
    """A byte count as MiB or GiB, for messages."""
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.2f} GiB"
    return f"{nbytes / 2**20:.1f} MiB"


def require_fit(ctx: Context, nbytes: float, what: str, margin: float = 0.9) -> None:
    """Refuse (DoesNotFit) before allocating when `nbytes` would not fit on the GPU."""
    info = free_device_memory(ctx)
    if info is None:
        return
    free, _ = info
    if nbytes > margin * free:
        exc = DoesNotFit(
            f"{what} needs about {fmt_bytes(nbytes)} on the GPU but {fmt_bytes(free)} is free:"
            " choose a smaller size"
        )
        exc.extra = {"requested_bytes": int(nbytes), "free_bytes": int(free), "memory": "gpu"}
        raise exc


def host_available_bytes() -> int | None:
    """Host RAM a new allocation can take now without swapping, or None when unknown: RAM
    available lowered to the tightest limit of this process's own memory cgroup (a
    container's, a systemd slice's); see gpulab.core.hostmem."""
    return available()


def require_host_fit(nbytes: float, what: str, margin: float = 0.9) -> None:
    """Refuse (DoesNotFit, as for the GPU) before allocating when `nbytes` of host memory
    would not fit in the RAM available now; a size that would push the machine into swap or
    the OOM killer ends in one clear line instead of a bare "out of memory"."""
    avail = host_available_bytes()
    if avail is None:
        return
    if nbytes > margin * avail:
        exc = DoesNotFit(
            f"{what} needs about {fmt_bytes(nbytes)} of host memory (RAM) but "
            f"{fmt_bytes(avail)} is available: choose a smaller size"
        )
        exc.extra = {"requested_bytes": int(nbytes), "free_bytes": int(avail), "memory": "host"}
        raise exc
