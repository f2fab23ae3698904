"""The CPU half of the calibration (`peaks.load_or_measure` on a machine without a GPU, or for
the CPU's own figures): a NumPy memory copy out of cache (on one thread and on every core, the
better kept) and NumPy matrix products.

Separate from peaks.py as calibration_gpu.py is: peaks.py decides what to measure and caches
it, these modules measure. NumPy is imported inside the function, like torch and CuPy there.
"""

from __future__ import annotations

import functools
import operator
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpulab.core.calibration import CPU_DTYPES, log
from gpulab.core.timing import Timer

CPU_MATMUL_N = 2048  # the CPU matmul ceiling is the best of 2048 and, on a fast CPU, 4096
CPU_MATMUL_MAX_N = 4096
CPU_MATMUL_STEP_S = 0.2  # ... when one product at the larger size would take under this


def cpu_threads() -> int:
    """The cores this process may run on (a container's or taskset's share, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)


def _copy_timing(timer: Any, src: Any, dst: Any) -> tuple[Any, int]:
    """The copy timed on one thread and on every core (NumPy's copy releases the GIL, so threads
    over slices run in parallel); the faster, with its thread count. One core does not reach a
    CPU's memory bandwidth: torch's multi-threaded rows beat a one-thread ceiling (1.9x on this
    project's 2-core CI box, several times on a many-core GPU host)."""
    import numpy as np

    one = timer.measure(lambda: np.copyto(dst, src), cold=False)
    threads = cpu_threads()
    if threads == 1:
        return one, 1
    n = src.size
    parts = [slice(i * n // threads, (i + 1) * n // threads) for i in range(threads)]

    def part(s: slice) -> None:
        np.copyto(dst[s], src[s])

    with ThreadPoolExecutor(threads, thread_name_prefix="gpulab-copy") as pool:
        many = timer.measure(lambda: list(pool.map(part, parts)), cold=False)
    return (many, threads) if many.min_s < one.min_s else (one, 1)


def measure_cpu(peaks: Any, todo: list[str], *, quick: bool, ctx: Any) -> None:
    """Measure the CPU ceilings named in `todo` (copy GB/s, matmul TFLOP/s per dtype) into
    `peaks`."""
    import numpy as np

    # The best of several runs: the ceiling is what this CPU can do, not what it did while
    # sharing its cores (a median under load left NumPy rows at 214% of "peak").
    timer = Timer(warmup=1, repeats=5 if quick else 10, budget_s=0.3 if quick else 1.5, min_runs=5)
    timer.cancel_check = getattr(ctx, "check_cancelled", None) or timer.cancel_check
    rng = np.random.default_rng(0)
    if "copy" in todo:
        n = (8 if quick else 256) * 2**20 // 4
        src = np.empty(n, dtype=np.float32)
        dst = np.empty_like(src)
        for i in range(0, n, 1 << 21):  # 2M at a time, a cancel taken between
            timer.cancel_check()
            rng.random(out=src[i : i + (1 << 21)], dtype=np.float32)
            dst[i : i + (1 << 21)] = 0.0  # its pages faulted in here, not in the first copy
        t, used = _copy_timing(timer, src, dst)
        peaks.copy_gbs = 2 * src.nbytes / t.min_s / 1e9
        peaks.detail["copy"] = {
            "bytes": 2 * src.nbytes,
            "counted": "read + written",
            "threads": used,
            "statistic": f"best of {t.runs} runs, the better of 1 and {cpu_threads()} threads",
            "min_s": t.min_s,
            "median_s": t.median_s,
        }
        log(ctx, f"CPU memory copy: {peaks.copy_gbs:.1f} GB/s ({used} thread(s))")
    for dtype in CPU_DTYPES:
        if f"matmul:{dtype}" not in todo:
            continue
        npd = np.float64 if dtype == "fp64" else np.float32
        first = n = 256 if quick else CPU_MATMUL_N
        while True:
            a = rng.standard_normal((n, n)).astype(npd)
            b = rng.standard_normal((n, n)).astype(npd)
            t = timer.measure(functools.partial(operator.matmul, a, b), cold=False)
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
        log(ctx, f"NumPy matmul {dtype}: {peaks.matmul_tflops[dtype] * 1e3:.1f} GFLOP/s")
