"""The CPU half of the calibration (`peaks.load_or_measure` on a machine without a GPU, or for
the CPU's own figures): a NumPy memory copy out of cache and NumPy matrix products.

Separate from peaks.py as calibration_gpu.py is: peaks.py decides what to measure and caches
it, these modules measure. NumPy is imported inside the function, like torch and CuPy there.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.peaks import CPU_DTYPES, Peaks, _log

CPU_MATMUL_N = 2048  # the CPU matmul ceiling is the best of 2048 and, on a fast CPU, 4096
CPU_MATMUL_MAX_N = 4096
CPU_MATMUL_STEP_S = 0.2  # ... when one product at the larger size would take under this


def measure_cpu(peaks: Peaks, todo: list[str], *, quick: bool, ctx: Any) -> None:
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
