"""Occupancy and block size: the CUDA occupancy API's prediction next to the measured GB/s.

Two CuPy kernels stream y = f(x) over n float32 elements, one element per thread, at block sizes
32 to 1024. `scale` is plain memory-bound work (y = a * x) with few registers; `heavy` does the
same traffic but keeps 64 accumulators live across a loop, so it needs many registers per thread
and the register file caps how many warps an SM holds. For each block size the driver's
occupancy calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor) says how many blocks fit on
an SM; occupancy is the resident warps over the SM's maximum. Where CuPy cannot call it, the same
figure is computed from the kernel's attributes (registers, shared memory) and the device's
limits. Bytes counted: 8 per element (read x, write y). Needs CuPy: there is no CPU path.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.devices import Inventory
from gpulab.core.params import Int, List, ParamError, ParamSet
from gpulab.core.results import Measurement, Result, Series, Verdict
from gpulab.experiments import ceilings, fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import measured

BLOCKS = (32, 64, 128, 256, 512, 1024)
ACCUMULATORS = 64
SAMPLE = 4096  # elements checked against float64 on the host

SOURCE = r"""
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a,
                                 long long n, int reps) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

// Every accumulator is live across the runtime-length loop, so each needs its own register.
extern "C" __global__ void heavy(const float* __restrict__ x, float* __restrict__ y, float a,
                                 long long n, int reps) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float acc[ACC];
    #pragma unroll
    for (int k = 0; k < ACC; ++k) acc[k] = v + (float)k;
    for (int r = 0; r < reps; ++r) {
        #pragma unroll
        for (int k = 0; k < ACC; ++k) acc[k] = fmaf(acc[k], a, 1.0f / (float)(k + 1));
    }
    float s = 0.0f;
    #pragma unroll
    for (int k = 0; k < ACC; ++k) s += acc[k];
    y[i] = s;
}
""".replace("ACC", str(ACCUMULATORS))

KERNELS = {"scale": "memory-bound (y = a * x)", "heavy": f"register-heavy ({ACCUMULATORS} live)"}


def predicted(
    block: int,
    regs: int,
    shared: int,
    *,
    regs_per_sm: int,
    threads_per_sm: int,
    blocks_per_sm: int,
    shared_per_sm: int,
    warp: int = 32,
    reg_unit: int = 256,
) -> tuple[int, str]:
    """Blocks per SM and the limit that set it, as the occupancy calculator works it out:
    registers are given to each warp in units of `reg_unit`, whole blocks at a time."""
    warps = math.ceil(block / warp)
    limits = {
        "blocks per SM": blocks_per_sm,
        "threads per SM": threads_per_sm // (warps * warp),
    }
    if regs > 0:
        per_warp = math.ceil(regs * warp / reg_unit) * reg_unit
        limits["registers"] = (regs_per_sm // per_warp) // warps
    if shared > 0:
        limits["shared memory"] = shared_per_sm // shared
    name = min(limits, key=lambda k: limits[k])
    return max(0, limits[name]), name


def fit_bytes(n: int) -> int:
    """Device bytes an occupancy run with `n` elements needs."""
    return int(2 * 4 * n * 1.05) + fits.SLACK_BYTES


class Occupancy(Experiment):
    """The `occupancy` experiment: Two CuPy kernels over block sizes 32..1024: predicted
    occupancy next to GB/s."""

    id = "occupancy"
    title = "Occupancy and block size"
    summary = "Two CuPy kernels over block sizes 32..1024: predicted occupancy next to GB/s."
    lesson = "performance-regimes"
    params = ParamSet(
        (
            Int("n", 64_000_000, "float32 elements streamed", unit="elements", min=1024, max=2e9),
            List(
                "blocks",
                list(BLOCKS),
                item="int",
                help="threads per block to try (multiples of 32, up to 1024)",
                min=32,
                max=1024,
            ),
        )
    )
    contenders = (
        Contender("scale", KERNELS["scale"], "cupy", help="few registers: occupancy set by blocks"),
        Contender("heavy", KERNELS["heavy"], "cupy", help="registers cap the resident warps"),
    )
    bench_params = ({"n": 64_000_000},)
    bench_suites = ("full",)

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        """Refuse block sizes that are not whole warps (multiples of 32)."""
        odd = [b for b in params["blocks"] if b % 32]
        if odd:  # a block is a whole number of warps
            raise ParamError(
                "blocks",
                ",".join(str(b) for b in params["blocks"]),
                "multiples of 32 from 32 to 1024",
                f"is not allowed: {odd[0]} is not a multiple of 32 (a warp)",
            )
        if not inventory.available("cupy"):
            why = inventory.reason("cupy") or inventory.gpu_reason or "no GPU"
            raise ExperimentError(
                f"occupancy compiles its own kernels and needs an NVIDIA GPU with CuPy: {why}"
            )

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        n = int(params["n"])
        blocks = sorted({int(b) for b in params["blocks"]})
        result = self.new_result(ctx, params)
        fits.require_fit(ctx, fit_bytes(n), f"occupancy with n={n:,}")  # before any CUDA call
        import cupy as cp
        import numpy as np

        p = ceilings.peaks(ctx)
        pk = ceilings.peak_here(p, "cupy", "copy")
        dev = cp.cuda.Device(ctx.device_index)
        with dev:
            attrs = dev.attributes
            limits = {  # the defaults are an H100's, for a CuPy that names an attribute otherwise
                "regs_per_sm": int(attrs.get("MaxRegistersPerMultiprocessor", 65536)),
                "threads_per_sm": int(attrs.get("MaxThreadsPerMultiProcessor", 2048)),
                "blocks_per_sm": int(attrs.get("MaxBlocksPerMultiprocessor", 32)),
                "shared_per_sm": int(attrs.get("MaxSharedMemoryPerMultiprocessor", 233472)),
            }
            max_warps = limits["threads_per_sm"] // 32
            x = cp.random.random(n, dtype=cp.float32)
            y = cp.empty_like(x)
            a = np.float32(0.999)
            pick = np.random.default_rng().integers(0, n, SAMPLE)
            xs = cp.asnumpy(x[cp.asarray(pick)]).astype(np.float64)
            refs = {"scale": a * xs, "heavy": heavy_reference(xs, float(a))}
            info: dict[str, Any] = {}
            steps = len(KERNELS) * len(blocks)
            done = 0
            for name in KERNELS:
                kernel = cp.RawKernel(SOURCE, name)
                regs, shared = int(kernel.num_regs), int(kernel.shared_size_bytes)
                limit = int(kernel.max_threads_per_block)
                gbs, occ = [], []
                for b in blocks:
                    ctx.progress(done / steps, f"{KERNELS[name]}, {b} threads per block")
                    done += 1
                    if b > limit:
                        result.unavailable[f"{name}-{b}"] = (
                            f"{name} can launch at most {limit} threads per block here "
                            f"({regs} registers each)"
                        )
                        continue
                    grid = (n + b - 1) // b
                    args = (x, y, a, np.int64(n), np.int32(1))

                    def call(
                        kernel: Any = kernel, grid: int = grid, b: int = b, args: Any = args
                    ) -> None:
                        kernel((grid,), (b,), args)

                    y.fill(np.nan)
                    call()
                    got = cp.asnumpy(y[cp.asarray(pick)]).astype(np.float64)
                    err = float(
                        np.max(np.abs(got - refs[name]) / np.maximum(np.abs(refs[name]), 1))
                    )
                    result.verdicts.append(
                        Verdict.check(
                            f"{name}-{b}",
                            err,
                            1e-5,
                            metric="max relative error on 4096 sampled elements",
                            reference="float64 on the host",
                        )
                    )
                    blocks_sm, why = occupancy_blocks(cp, kernel, b, regs, shared, limits)
                    occupancy = min(1.0, blocks_sm * math.ceil(b / 32) / max_warps)
                    timing = ctx.timer.measure(call, sync="cupy")
                    m = row(
                        name,
                        f"block {b}",
                        timing,
                        work=8.0 * n,
                        unit="GB/s",
                        scale=1e9,
                        dtype="fp32",
                        peak=pk,
                        peak_name="memory copy (read + written)" if pk else "",
                        note=f"predicted occupancy {100 * occupancy:.0f}% ({why})",
                        block=b,
                        registers=regs,
                        blocks_per_sm=blocks_sm,
                        occupancy=occupancy,
                        limited_by=why,
                        bytes_counted="8 * n (read x, write y)",
                    )
                    result_rows.emit(ctx, result, m)
                    gbs.append((b, m.throughput or 0.0))
                    occ.append((b, 100 * occupancy))
                info[name] = {"registers": regs, "gbs": dict(gbs), "occupancy_pct": dict(occ)}
                for label, pts, unit in (("GB/s", gbs, "GB/s"), ("occupancy %", occ, "%")):
                    result.series.append(
                        Series(
                            f"{name} {label}",
                            [float(b) for b, _ in pts],
                            [v for _, v in pts],
                            "threads per block",
                            unit,
                            log_x=True,
                        )
                    )
            del x, y
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "device_limits": limits, "kernels": info}
        result.explanation = explain(result.measurements, info)
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the memory-bound kernel's best GB/s and its predicted occupancy against the
        worst block size."""
        rows = [m for m in measured(result) if m.contender == "scale" and m.throughput]
        if not rows:
            return ""
        best = max(rows, key=lambda m: m.throughput or 0.0)
        worst = min(rows, key=lambda m: m.throughput or 0.0)
        return (
            f"memory-bound kernel: {worst.throughput:.0f} GB/s at {worst.size} "
            f"({100 * worst.extra['occupancy']:.0f}% predicted occupancy) vs "
            f"{best.throughput:.0f} GB/s at {best.size} ({100 * best.extra['occupancy']:.0f}%)"
        )


def heavy_reference(xs: Any, a: float) -> Any:
    """What `heavy` computes with reps=1, in float64."""
    import numpy as np

    k = np.arange(ACCUMULATORS, dtype=np.float64)
    acc = (xs[:, None] + k[None, :]) * a + 1.0 / (k[None, :] + 1.0)
    return acc.sum(axis=1)


def occupancy_blocks(
    cp: Any, kernel: Any, block: int, regs: int, shared: int, limits: dict[str, int]
) -> tuple[int, str]:
    """The driver's answer when CuPy exposes it; else the same sum from the attributes."""
    computed, why = predicted(block, regs, shared, **limits)
    try:
        fn = kernel.kernel if hasattr(kernel, "kernel") else kernel
        found = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, block, 0))
    except Exception:  # noqa: BLE001 - an older CuPy: the computed figure stands
        return computed, f"{why}; computed from the attributes"
    if found != computed:
        # The driver knows allocation rules the arithmetic does not (seen on an H100 for the
        # register-heavy kernel at 32 threads): its answer stands, and the row says both.
        why = f"the driver's occupancy calculator (the attribute arithmetic gave {computed} blocks)"
    return found, why


def explain(rows: list[Measurement], info: dict[str, Any]) -> str:
    """The occupancy run's explanation: what caps occupancy and why more did not mean faster."""
    text = (
        "Occupancy is the share of an SM's warp slots that a kernel's blocks fill. It is capped "
        "by whichever runs out first: the blocks an SM may hold (32 on an A100 or H100, so "
        "32-thread blocks fill at most half of its 64 warp slots; 16 on many consumer cards), "
        "the threads it may hold, the register "
        "file (64K registers shared by every resident thread) and shared memory. A "
        "memory-bound kernel needs enough warps in flight to keep many loads outstanding, so "
        "its GB/s falls at low occupancy; past a point more warps add nothing, and beyond "
        "that occupancy is not speed. "
    )
    for name in KERNELS:
        mine = [m for m in rows if m.contender == name and m.throughput]
        if not mine:
            continue
        best = max(mine, key=lambda m: m.throughput or 0.0)
        worst = min(mine, key=lambda m: m.throughput or 0.0)
        regs = info.get(name, {}).get("registers", 0)
        text += (
            f"{KERNELS[name].capitalize()} ({regs} registers a thread): best {best.throughput:.0f} "
            f"GB/s at {best.size} (predicted occupancy "
            f"{100 * best.extra['occupancy']:.0f}%), worst {worst.throughput:.0f} GB/s at "
            f"{worst.size} ({100 * worst.extra['occupancy']:.0f}%). "
        )
    text += (
        "Pick block sizes that are multiples of 32 (a warp), usually 128 to 512; check a "
        "register-heavy kernel's occupancy before tuning anything else."
    )
    return text


EXPERIMENT = Occupancy()
