"""This device's calibrated ceilings as an experiment reads them: the GPU's and the host's.

The denominators of every row's "% of peak" (core.peaks measures and caches them).
"""

from __future__ import annotations

from typing import Any

from gpulab.core import peaks as peaks_mod
from gpulab.core.errors import Cancelled
from gpulab.core.peaks import peak_for
from gpulab.experiments.base import Context


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
