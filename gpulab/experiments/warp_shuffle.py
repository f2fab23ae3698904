"""Warp shuffles against a shared-memory tree: the same block reduction written two ways.

Both kernels (CuPy RawKernels, 256 threads a block) read n float32 values, each thread summing
`per_thread` of them in a register first, and write one partial sum per block. The shared tree
stores 256 values and halves them over 8 levels, with a `__syncthreads()` at each; the shuffle
kernel combines each warp's 32 values in 5 register-to-register steps and puts only 8 values
(one per warp) through shared memory. With one element per thread the in-block reduction is a
large share of the work and the difference shows; with many, both stream memory at nearly the
copy's rate. Every row is GB/s over the bytes read and written, against the device's calibrated
copy (bytes read + written) and beside a copy of the same bytes timed in this run.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.devices import Inventory
from gpulab.core.params import Int, List, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import ceilings, fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import times

THREADS = 256
FP32_EPS = 2.0**-24

TREE = r"""
#define BLOCK 256
extern "C" __global__ void tree_partials(const float* x, float* partial, long long n) {
    __shared__ float sm[BLOCK];
    int t = threadIdx.x;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    sm[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = sm[0];
}
"""

SHUFFLE = r"""
#define BLOCK 256
#define FULL 0xffffffffu
extern "C" __global__ void shuffle_partials(const float* x, float* partial, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_totals[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
        if (lane == 0) partial[blockIdx.x] = v;
    }
}
"""

KERNELS = {"shared-tree": (TREE, "tree_partials"), "warp-shuffle": (SHUFFLE, "shuffle_partials")}


def blocks_for(n: int, per_thread: int) -> int:
    """Blocks so that each thread sums `per_thread` elements (its grid-stride loop's trips)."""
    return max(1, -(-n // (THREADS * per_thread)))


def tolerance(n: int, per_thread: int) -> float:
    """Relative error allowed for the fp32 partial sums of values in [0, 1), added in float64:
    a thread's run of `per_thread` additions and the block's 8 levels, a few eps each."""
    return 4 * FP32_EPS * (math.sqrt(per_thread) + math.log2(THREADS))


class WarpShuffle(Experiment):
    id = "warp-shuffle"
    title = "Warp shuffles vs a shared-memory tree"
    summary = "One block reduction two ways: 8 shared-memory levels or 5 shuffle steps per warp."
    lesson = "warp-primitives"
    params = ParamSet(
        (
            Int("n", 1 << 26, "float32 elements to reduce", unit="elements", min=1024, max=1 << 31),
            List(
                "per_thread",
                [1, 4, 32],
                item="int",
                help="elements each thread sums in a register before the block's reduction",
                min=1,
                max=4096,
            ),
        )
    )
    contenders = (
        Contender("shared-tree", "shared-memory tree (8 levels, __syncthreads each)", "cupy"),
        Contender("warp-shuffle", "__shfl_down_sync within each warp, 8 floats shared", "cupy"),
        Contender("copy", "device copy of the same bytes (this run's peer)", "cupy"),
    )
    bench_params = ({"n": 1 << 26, "per_thread": [1, 4, 32]},)
    bench_suites = ("full",)

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        if not inventory.available("cupy"):
            why = inventory.reason("cupy") or inventory.gpu_reason or "no GPU"
            raise ExperimentError(
                f"warp-shuffle compiles its own kernels and needs an NVIDIA GPU with CuPy: {why}"
            )

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        n = int(params["n"])
        sizes = sorted({int(p) for p in params["per_thread"]})
        result = self.new_result(ctx, params)
        fits.require_fit(ctx, n * 4 * 2.1, f"warp-shuffle over n={n:,}")  # x and a copy of it
        import cupy as cp

        p = ceilings.peaks(ctx)
        pk = ceilings.peak_here(p, "cupy", "copy")
        gbs: dict[str, dict[int, float]] = {"shared-tree": {}, "warp-shuffle": {}}
        with cp.cuda.Device(ctx.device_index):
            x = cp.random.default_rng(7).random(n, dtype=cp.float32)
            exact = float(cp.sum(x, dtype=cp.float64))
            kernels = {k: cp.RawKernel(src, name) for k, (src, name) in KERNELS.items()}
            todo = [c.id for c in result_rows.todo(self, result)]
            steps = len(sizes) * 2 + 1
            done = 0
            for per in sizes:
                blocks = blocks_for(n, per)
                partial = cp.empty(blocks, dtype=cp.float32)
                for cid in ("shared-tree", "warp-shuffle"):
                    if cid not in todo:
                        continue
                    ctx.progress(done / steps, f"{cid}: {per} per thread, {blocks:,} blocks")
                    done += 1
                    k = kernels[cid]

                    def call(k: Any = k, blocks: int = blocks, partial: Any = partial) -> None:
                        k((blocks,), (THREADS,), (x, partial, cp.int64(n)))

                    partial.fill(math.nan)
                    call()
                    got = float(cp.sum(partial, dtype=cp.float64))
                    err = abs(got - exact) / exact
                    result.verdicts.append(
                        Verdict.check(
                            cid,
                            err,
                            tolerance(n, per),
                            metric="relative error of the sum of the partials",
                            reference="float64 sum of the same array",
                            size=f"{per}/thread",
                            dtype="fp32",
                        )
                    )
                    timing = ctx.timer.measure(call, sync="cupy")
                    m = result_rows.emit(
                        ctx,
                        result,
                        row(
                            cid,
                            f"{per}/thread",
                            timing,
                            work=n * 4 + blocks * 4,
                            unit="GB/s",
                            scale=1e9,
                            dtype="fp32",
                            peak=pk,
                            peak_name="memory copy (read + written)" if pk else "",
                            bytes_counted="n * 4 read + 4 per block written",
                            blocks=blocks,
                            shared_bytes=k.attributes.get("shared_size_bytes"),
                        ),
                    )
                    gbs[cid][per] = m.throughput or 0.0
            if "copy" in todo:
                ctx.progress(done / steps, "copy of the same bytes")
                y = cp.empty_like(x)
                timing = ctx.timer.measure(lambda: cp.copyto(y, x), sync="cupy")
                m = result_rows.emit(
                    ctx,
                    result,
                    row(
                        "copy",
                        "n",
                        timing,
                        work=n * 8,
                        unit="GB/s",
                        scale=1e9,
                        dtype="fp32",
                        peak=pk,
                        peak_name="memory copy (read + written)" if pk else "",
                        bytes_counted="n * 4 read + n * 4 written",
                    ),
                )
                result.summary["copy_gbs_this_run"] = m.throughput
        ctx.progress(1.0, "done")
        ratios = {
            str(per): gbs["warp-shuffle"][per] / gbs["shared-tree"][per]
            for per in sizes
            if gbs["shared-tree"].get(per) and gbs["warp-shuffle"].get(per)
        }
        result.summary.update(
            {
                "n": n,
                "gbs": {k: {str(a): b for a, b in v.items()} for k, v in gbs.items()},
                "shuffle_vs_tree": ratios,
            }
        )
        if pk:
            result.summary["copy_gbs"] = float(pk)
            result.summary["shuffle_of_copy"] = {
                str(per): g / float(pk) for per, g in gbs["warp-shuffle"].items()
            }
        result.explanation = (
            "Both kernels read the same bytes and add them in the same registers; they differ "
            "only in how a block's 256 partial sums become one. The shared tree writes all 256 "
            "to shared memory and halves them 8 times, every level behind a __syncthreads() "
            "that the whole block waits at, with fewer threads working at each. The shuffle "
            "kernel moves values between the registers of a warp's lanes (5 steps, no shared "
            "memory, no block barrier) and puts one value per warp through shared memory. "
            "When each thread has summed many elements first, that difference is a small part "
            "of the time and both run near the copy's rate; at one element per thread it is "
            "most of the work. The mask in __shfl_down_sync(0xffffffff, ...) names the lanes "
            "that take part: since Volta a warp's threads may run apart, so code that counts "
            "on lockstep instead of a shuffle or __syncwarp() is a race."
        )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        ratios = result.summary.get("shuffle_vs_tree") or {}
        if not ratios:
            return ""
        per = min(ratios, key=int)
        g = result.summary["gbs"]["warp-shuffle"][per]
        of = result.summary.get("shuffle_of_copy", {}).get(per)
        share = f" ({100 * of:.0f}% of copy)" if of else ""
        return (
            f"warp shuffles {times(ratios[per])} the shared tree's GB/s at {per} element(s) per "
            f"thread: {g:,.0f} GB/s{share}"
        )


EXPERIMENT = WarpShuffle()
