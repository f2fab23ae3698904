"""Check for honest-timing: the learner times a matmul on the CPU and on the GPU.

Before the learner's code is loaded, the check times each matmul itself: a few warm-up calls,
then the median of several, with CUDA events on the GPU and perf_counter on the CPU. The
learner's figure (seconds per call) must agree within wide bounds: timing is noisy, but the
usual mistakes (stopping the clock before the GPU finished, reporting the total of all runs or
milliseconds) are off by far more.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from gpulab.exercises import api

ENTRY = "time_matmul"
WARMUP, RUNS = 3, 10
GPU_BOUNDS = (0.6, 1.7)
# A CPU shares its cores with everything else running, and a thread pool's wake-up varies
# from call to call: wide bounds, still far tighter than the mistakes they catch (1000x for
# milliseconds, RUNS x for a total); the GPU cases judge synchronization tightly.
CPU_BOUNDS = (0.2, 5.0)


def cases(ctx: api.Context) -> list[api.Case]:
    # Big enough (about 0.9 GFLOP) that a CPU thread pool waking up is not most of a call.
    plan: list[tuple[str, tuple[int, int, int], str]] = [("cpu", (768, 768, 768), "float32")]
    if ctx.gpu:
        plan += [
            (ctx.device, (1024, 1024, 1024), "float32"),
            (ctx.device, (4096, 4096, 4096), "float32"),
            (ctx.device, (4096, 4096, 4096), "float16"),
            (ctx.device, (3000, 2000, 1000), "float32"),
        ]
    out = []
    for device, (m, k, n), dtype in plan:
        seed = int(ctx.rng.integers(1 << 31))
        out.append(
            api.Case(
                f"({m} x {k}) @ ({k} x {n}) {dtype} on {device}",
                {"device": device, "shape": (m, k, n), "dtype": dtype, "seed": seed},
            )
        )
    return out


def _operands(case: api.Case) -> tuple[Any, Any]:
    import torch

    m, k, n = case.args["shape"]
    device = torch.device(case.args["device"])
    dtype = getattr(torch, case.args["dtype"])
    g = torch.Generator(device=device).manual_seed(case.args["seed"])
    # Values of both signs and never all zero: a GPU multiplies zeros faster (less power).
    a = torch.randn(m, k, device=device, generator=g).to(dtype)
    b = torch.randn(k, n, device=device, generator=g).to(dtype)
    return a, b


def _seconds(a: Any, b: Any) -> float:
    import torch

    if a.device.type == "cuda":
        for _ in range(WARMUP):
            a @ b
        times = []
        for _ in range(RUNS):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            a @ b
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times)
    for _ in range(WARMUP):
        a @ b
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def expected(case: api.Case, ctx: api.Context) -> float:
    a, b = _operands(case)
    return _seconds(a, b)


def run(fn: Any, case: api.Case, ctx: api.Context) -> float:
    a, b = _operands(case)
    got = fn(a, b)
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise api.CheckError(f"time_matmul returned {got!r}: expected seconds per call, a float")
    if not got > 0:
        raise api.CheckError(f"time_matmul returned {got!r} seconds: expected a positive time")
    return float(got)


def compare(want: float, got: float, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    low, high = CPU_BOUNDS if case.args["device"] == "cpu" else GPU_BOUNDS
    ratio = got / want
    if low <= ratio <= high:
        return None
    if ratio < low:
        why = (
            "too fast: did the clock stop before the GPU finished (synchronize before reading "
            "it), or is this not seconds per call?"
        )
    else:
        why = (
            "too slow: report seconds (not milliseconds) per call (not the total of all runs), "
            "and leave the first, cold call out"
        )
    return api.Mismatch(
        f"time_matmul reported {got * 1e3:.4g} ms per matmul, the check measured "
        f"{want * 1e3:.4g} ms ({ratio:.3g}x, accepted {low}x to {high}x): {why}",
        expected=want,
        got=got,
        max_error=abs(got - want),
    )
