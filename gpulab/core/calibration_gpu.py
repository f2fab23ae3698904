"""The GPU half of the calibration (`peaks.load_or_measure`): through torch, or CuPy alone.

Every figure is the best this device reached, not a median: a ceiling is what the device can
do, and a median taken while something else shared the PCIe link or the power budget once
left pinned device-to-host at 38 GB/s while the rows it bounded ran at 55 ("140% of peak").
So each figure is the fastest timed sample (each sample of a matmul is ~30 ms of back-to-back
calls in the sustained regime, so it is a sustained speed, not a boost-clock burst), and the
pinned copies are taken at several sizes, in several rounds that alternate the directions, the
best kept: a copy reaches the link's speed only past some size, and one round can be unlucky.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gpulab.core.calibration import CUPY_DTYPES, GPU_DTYPES, log
from gpulab.core.timing import Timer, sustained_kw

PINNED_SIZES_MIB = (64, 256)  # where pinned copies level off (bench: 64 MiB..1 GiB within 1%)
PINNED_SIZES_MIB_QUICK = (8, 32)
PINNED_ROUNDS = 3


def best_copy_gbs(
    timer: Any,
    copies: dict[str, Callable[[int], Callable[[], Any]]],
    sizes: list[int],
    *,
    sync: str,
    rounds: int = PINNED_ROUNDS,
) -> dict[str, dict[str, Any]]:
    """For each direction in `copies` (name -> a copy of `size` bytes), the best GB/s over
    `rounds` rounds x `sizes`, the directions interleaved so a slow moment hits neither alone.
    Returns name -> {"gbs", "bytes" (of the best), "samples", "statistic"}."""
    best: dict[str, dict[str, Any]] = {}
    samples = 0
    for _ in range(max(1, rounds)):
        for size in sizes:
            for name, make in copies.items():
                t = timer.measure(make(size), sync=sync, cold=False)
                samples += t.runs
                gbs = size / t.min_s / 1e9
                if name not in best or gbs > best[name]["gbs"]:
                    best[name] = {"gbs": gbs, "bytes": size, "min_s": t.min_s}
    sizes_mib = ", ".join(f"{s // 2**20} MiB" for s in sizes)
    for entry in best.values():
        entry["statistic"] = (
            f"fastest of {rounds} rounds at {sizes_mib} (directions interleaved), best sample"
        )
    return best


def _pinned_sizes(quick: bool) -> list[int]:
    return [m * 2**20 for m in (PINNED_SIZES_MIB_QUICK if quick else PINNED_SIZES_MIB)]


def measure_gpu(peaks: Any, todo: list[str], *, quick: bool, ctx: Any) -> None:
    """Measure the GPU ceilings named in `todo` (device copy, pinned H2D/D2H, matmul per dtype)
    into `peaks`."""
    import torch

    device = torch.device(f"cuda:{ctx.device_index}")
    timer = Timer(warmup=2, repeats=5 if quick else 15, budget_s=0.2 if quick else 1.0)
    with torch.cuda.device(device):
        if "copy" in todo:
            # Far larger than L2 (50-60 MB on Hopper), so this measures HBM, not the cache.
            n = (64 if quick else 1024) * 2**20 // 4
            src = torch.rand(n, device=device)
            dst = torch.empty_like(src)
            t = timer.measure(lambda: dst.copy_(src), sync="torch", cold=False)
            peaks.copy_gbs = 2 * src.numel() * 4 / t.min_s / 1e9
            peaks.detail["copy"] = {
                "bytes": 2 * n * 4,
                "counted": "read + written",
                "statistic": f"best of {t.runs} runs",
                "min_s": t.min_s,
                "median_s": t.median_s,
            }
            del src, dst
            log(ctx, f"device-to-device copy: {peaks.copy_gbs:.0f} GB/s")
        if "h2d" in todo or "d2h" in todo:
            sizes = _pinned_sizes(quick)
            hi = max(sizes)
            host = torch.empty(hi, dtype=torch.uint8, pin_memory=True)
            host.fill_(0x5A)  # touched, so no first-use page faults are timed
            dev = torch.empty(hi, dtype=torch.uint8, device=device)

            # Views made once per size: nothing but the copy between the events.
            def h2d(s: int) -> Callable[[], Any]:
                d, h = dev[:s], host[:s]
                return lambda: d.copy_(h, non_blocking=True)

            def d2h(s: int) -> Callable[[], Any]:
                d, h = dev[:s], host[:s]
                return lambda: h.copy_(d, non_blocking=True)

            copies: dict[str, Callable[[int], Callable[[], Any]]] = {"h2d": h2d, "d2h": d2h}
            copies.update(_runtime_copies(ctx, host.data_ptr(), dev.data_ptr(), device))
            best = best_copy_gbs(
                timer, copies, sizes, sync="torch", rounds=1 if quick else PINNED_ROUNDS
            )
            _store_pinned(peaks, _fastest_method(best), "torch copy_ or cudaMemcpyAsync")
            del host, dev
            log(
                ctx,
                f"pinned H2D / D2H: {peaks.h2d_pinned_gbs:.1f} / {peaks.d2h_pinned_gbs:.1f} GB/s",
            )
        tdtypes = {
            "fp64": torch.float64,
            "fp32": torch.float32,
            "tf32": torch.float32,
            "fp16": torch.float16,
            "bf16": torch.bfloat16,
        }
        for dtype in GPU_DTYPES:
            if f"matmul:{dtype}" not in todo:
                continue
            n = 2048 if quick else 8192
            if dtype == "fp64" and not quick and slow_fp64(torch, device):
                n = 4096  # fp64 at 1/32..1/64 of fp32 (consumer parts): 8192 would take seconds
            a = torch.randn(n, n, device=device, dtype=tdtypes[dtype])
            b = torch.randn(n, n, device=device, dtype=tdtypes[dtype])
            out = torch.empty(n, n, device=device, dtype=tdtypes[dtype])
            saved = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            try:

                def mm(a: Any = a, b: Any = b, out: Any = out) -> None:
                    torch.mm(a, b, out=out)

                kw = sustained_kw(mm, torch.cuda.synchronize, 0.1 if quick else 0.5)
                kw.setdefault("cold", False)
                t = timer.measure(mm, sync="torch", **kw)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = saved
            _store_matmul(peaks, dtype, n, t, f"cuBLAS via torch {torch.__version__}")
            del a, b, out
            log(ctx, f"matmul {dtype} n={n}: {peaks.matmul_tflops[dtype]:.1f} TFLOP/s")
        torch.cuda.empty_cache()


def _runtime_copies(ctx: Any, h_ptr: int, d_ptr: int, device: Any) -> dict[str, Any]:
    """With CuPy, the same pinned copies as a bare cudaMemcpyAsync on torch's stream (the
    bandwidth experiment's `runtime` rows): the ceiling is the faster of the two methods."""
    if not getattr(ctx, "has_cupy", False):
        return {}
    try:
        import cupy as cp
        import torch
    except ImportError:
        return {}
    rt = cp.cuda.runtime
    stream = torch.cuda.current_stream(device).cuda_stream
    return {
        "h2d runtime": lambda s: lambda: rt.memcpyAsync(d_ptr, h_ptr, s, 1, stream),
        "d2h runtime": lambda s: lambda: rt.memcpyAsync(h_ptr, d_ptr, s, 2, stream),
    }


def _fastest_method(best: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per direction, the faster of the methods measured ('h2d', 'h2d runtime', ...)."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in best.items():
        d = name.split()[0]
        method = "cudaMemcpyAsync" if name.endswith("runtime") else "torch copy_"
        if d not in out or entry["gbs"] > out[d]["gbs"]:
            out[d] = {**entry, "statistic": f"{entry['statistic']}, by {method}"}
    return out


def _store_pinned(peaks: Any, best: dict[str, dict[str, Any]], how: str) -> None:
    peaks.h2d_pinned_gbs = best["h2d"]["gbs"]
    peaks.d2h_pinned_gbs = best["d2h"]["gbs"]
    for d in ("h2d", "d2h"):
        peaks.detail[d] = {
            "bytes": best[d]["bytes"],
            "pinned": True,
            "library": how,
            "statistic": best[d]["statistic"],
            "min_s": best[d]["min_s"],
        }


def _store_matmul(peaks: Any, dtype: str, n: int, t: Any, library: str) -> None:
    peaks.matmul_tflops[dtype] = 2 * n**3 / t.min_s / 1e12
    peaks.detail[f"matmul:{dtype}"] = {
        "n": n,
        "library": library,
        "statistic": f"fastest of {t.runs} sustained samples (back to back after a warm-up)",
        "min_s": t.min_s,
        "median_s": t.median_s,
    }


def measure_gpu_cupy(peaks: Any, todo: list[str], *, quick: bool, ctx: Any) -> None:
    """The GPU calibration through CuPy, for a CUDA machine whose torch has no CUDA.

    The same figures and sizes as `measure_gpu` (bf16 and TF32 excepted: CuPy has neither),
    pinned copies through cudaMemcpyAsync on page-locked host memory.
    """
    import cupy as cp
    import cupyx
    import numpy as np

    timer = Timer(warmup=2, repeats=5 if quick else 15, budget_s=0.2 if quick else 1.0)
    device = cp.cuda.Device(ctx.device_index)
    with device:
        sync = device.synchronize
        if "copy" in todo:
            n = (64 if quick else 1024) * 2**20 // 4
            src = cp.random.random(n, dtype=cp.float32)
            dst = cp.empty_like(src)
            t = timer.measure(lambda: cp.copyto(dst, src), sync="cupy", cold=False)
            peaks.copy_gbs = 2 * n * 4 / t.min_s / 1e9
            peaks.detail["copy"] = {
                "bytes": 2 * n * 4,
                "counted": "read + written",
                "statistic": f"best of {t.runs} runs",
                "min_s": t.min_s,
                "median_s": t.median_s,
                "library": f"CuPy {cp.__version__}",
            }
            del src, dst
            log(ctx, f"device-to-device copy: {peaks.copy_gbs:.0f} GB/s")
        if "h2d" in todo or "d2h" in todo:
            sizes = _pinned_sizes(quick)
            hi = max(sizes)
            host = cupyx.empty_pinned((hi,), dtype=np.uint8)
            host[...] = np.random.default_rng().integers(0, 256, hi, dtype=np.uint8)
            dev = cp.empty(hi, dtype=cp.uint8)
            stream = cp.cuda.get_current_stream().ptr
            h_ptr, d_ptr = host.ctypes.data, dev.data.ptr
            rt = cp.cuda.runtime
            h2d, d2h = 1, 2  # cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost
            best = best_copy_gbs(
                timer,
                {
                    "h2d": lambda s: lambda: rt.memcpyAsync(d_ptr, h_ptr, s, h2d, stream),
                    "d2h": lambda s: lambda: rt.memcpyAsync(h_ptr, d_ptr, s, d2h, stream),
                },
                sizes,
                sync="cupy",
                rounds=1 if quick else PINNED_ROUNDS,
            )
            _store_pinned(peaks, best, "cudaMemcpyAsync via CuPy")
            del host, dev
            log(
                ctx,
                f"pinned H2D / D2H: {peaks.h2d_pinned_gbs:.1f} / {peaks.d2h_pinned_gbs:.1f} GB/s",
            )
        cdtypes = {"fp64": cp.float64, "fp32": cp.float32, "fp16": cp.float16}
        for dtype in CUPY_DTYPES:
            if f"matmul:{dtype}" not in todo:
                continue
            n = 2048 if quick else 8192
            cpd = cdtypes[dtype]
            if dtype == "fp64" and not quick:
                a = cp.random.standard_normal((4096, 4096), dtype=cp.float64)
                cp.matmul(a, a)
                sync()
                t0 = time.perf_counter()
                cp.matmul(a, a)
                sync()
                if time.perf_counter() - t0 > 0.02:  # no fp64 tensor cores: see slow_fp64
                    n = 4096
                del a
            a = cp.random.standard_normal((n, n), dtype=cp.float32).astype(cpd, copy=False)
            b = cp.random.standard_normal((n, n), dtype=cp.float32).astype(cpd, copy=False)
            out = cp.empty((n, n), dtype=cpd)

            def mm(a: Any = a, b: Any = b, out: Any = out) -> None:
                cp.matmul(a, b, out=out)

            kw = sustained_kw(mm, sync, 0.1 if quick else 0.5)
            kw.setdefault("cold", False)
            t = timer.measure(mm, sync="cupy", **kw)
            _store_matmul(peaks, dtype, n, t, f"cuBLAS via CuPy {cp.__version__}")
            del a, b, out
            log(ctx, f"matmul {dtype} n={n}: {peaks.matmul_tflops[dtype]:.1f} TFLOP/s")
        cp.get_default_memory_pool().free_all_blocks()


def slow_fp64(torch: Any, device: Any) -> bool:
    """Whether one 4096 fp64 product takes over 20 ms here (no fp64 tensor cores).

    Data-centre parts (H100: about 2.5 ms) are calibrated at 8192 like every other dtype: an
    H100 calibrated at 4096 gave 55 TFLOP/s while the dtypes experiment's 8192 product ran at
    62, i.e. "113% of peak". The smaller size is not the device's ceiling.
    """
    a = torch.randn(4096, 4096, device=device, dtype=torch.float64)
    torch.mm(a, a)
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    torch.mm(a, a)
    torch.cuda.synchronize(device)
    slow = time.perf_counter() - t0 > 0.02
    del a
    return slow
