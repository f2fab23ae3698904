"""Numerics and determinism: how far results move between runs, dtypes and math functions.

Four measurements, each against float64: (1) the run-to-run spread of float sums whose order
depends on scheduling (a CuPy atomicAdd per block, torch's index_add_) beside the same sums in
a fixed order (a two-pass tree, index_add_ under torch.use_deterministic_algorithms), with the
time of each; (2) the error of one matmul in fp32, TF32, bf16 and fp16; (3) how a running sum's
error grows with its length when the accumulator is float16 or float32 (NumPy, on the host: the
arithmetic is the point, not the speed); (4) the error of CUDA's fast `__expf` against `expf`.
Every figure is measured in the run; nothing is quoted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
from collections.abc import Iterator
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row

FP32_EPS = 2.0**-24
BLOCK = 256

SUMS = r"""
#define BLOCK 256
#define FULL 0xffffffffu
__device__ float block_sum(const float* x, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? warp_totals[lane] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    return v;  // the block's total, in thread 0
}
extern "C" __global__ void atomic_sum(const float* x, float* out, long long n) {
    float v = block_sum(x, n);
    if (threadIdx.x == 0) atomicAdd(out, v);  // the order of these adds changes run to run
}
extern "C" __global__ void partial_sums(const float* x, float* partial, long long n) {
    float v = block_sum(x, n);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;  // then one block sums them, in index order
}
extern "C" __global__ void exps(const float* x, float* slow, float* fast, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { slow[i] = expf(x[i]); fast[i] = __expf(x[i]); }
}
"""


def _digest(a: Any) -> str:
    """The bits of an array (host NumPy), to count distinct results."""
    return hashlib.sha256(a.tobytes()).hexdigest()


@contextlib.contextmanager
def _torch_flags(*, tf32: bool | None = None, deterministic: bool | None = None) -> Iterator[None]:
    """Set TF32 for matmuls and/or deterministic algorithms, and put them back afterwards."""
    import torch

    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    old_det = torch.are_deterministic_algorithms_enabled()
    try:
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        if deterministic is not None:
            torch.use_deterministic_algorithms(deterministic)
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
        torch.use_deterministic_algorithms(old_det)


class Numerics(Experiment):
    id = "numerics"
    title = "Numerics and determinism"
    summary = "Run-to-run spread of atomic float sums, matmul error by dtype, fp16 accumulation."
    lesson = "numerics"
    params = ParamSet(
        (
            Int("n", 1 << 24, "float32 values in each sum", unit="elements", min=1024, max=1 << 30),
            Int("runs", 10, "repeats of each sum, to count distinct results", min=2, max=100),
            Int("size", 4096, "matmul size on the GPU", min=64, max=16384),
            Int("cpu_size", 256, "matmul size on the CPU", min=16, max=4096),
            Int(
                "acc_max",
                1 << 20,
                "longest running sum (host)",
                unit="elements",
                min=1024,
                max=1 << 24,
            ),
        )
    )
    contenders = (
        Contender("atomic", "atomicAdd of each block's sum (CuPy)", "cupy"),
        Contender("fixed-order", "per-block sums, then one block in index order (CuPy)", "cupy"),
        Contender("index-add", "torch index_add_ into 1024 bins", "torch-cuda"),
        Contender("index-add-det", "index_add_ under use_deterministic_algorithms", "torch-cuda"),
        Contender("fp32", "matmul fp32 (allow_tf32 off)", "torch-cuda"),
        Contender("tf32", "matmul fp32 inputs, TF32 tensor cores", "torch-cuda"),
        Contender("bf16", "matmul bf16", "torch-cuda"),
        Contender("fp16", "matmul fp16", "torch-cuda"),
        Contender("fp32-cpu", "matmul fp32 (CPU)", "torch-cpu"),
        Contender("bf16-cpu", "matmul bf16 (CPU)", "torch-cpu"),
        Contender("fp16-running", "running sum, float16 accumulator (NumPy)", "numpy"),
        Contender("fp32-running", "running sum, float32 accumulator (NumPy)", "numpy"),
        Contender("expf", "expf (CUDA)", "cupy"),
        Contender("fast-expf", "__expf, the fast-math intrinsic (CUDA)", "cupy"),
    )
    bench_params = ({"n": 1 << 24, "runs": 10, "size": 4096},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        result = self.new_result(ctx, params)
        todo = {c.id for c in result_rows.todo(self, result)}
        s: dict[str, Any] = result.summary
        s.update({"n": int(params["n"]), "runs": int(params["runs"])})
        ctx.progress(0.0, "starting")
        if todo & {"atomic", "fixed-order", "expf", "fast-expf"}:
            self._cupy(ctx, result, params, todo)
        if todo & {"index-add", "index-add-det"}:
            self._index_add(ctx, result, params, todo)
        self._matmuls(ctx, result, params, todo)
        if todo & {"fp16-running", "fp32-running"}:
            self._running(ctx, result, params, todo)
        ctx.progress(1.0, "done")
        result.explanation = (
            "Float addition is not associative: (a + b) + c and a + (b + c) round differently. "
            "A sum whose order is set by which block's atomicAdd lands first (or by index_add_'s "
            "atomics) therefore gives a different last few bits from run to run, each result "
            "as accurate as the others; the same work in a fixed order (per-block sums, then one "
            "block in index order) gives the same bits every time, for little extra time. "
            "torch.use_deterministic_algorithms picks such orders where it has them, at a price "
            "the row shows. The accumulator's dtype sets the error growth: a float16 running sum "
            "stops growing once its spacing exceeds the values it adds. TF32 keeps fp32's range "
            "but rounds matmul inputs to 10 mantissa bits, so its error sits near bf16's and "
            "fp16's, not fp32's. __expf trades accuracy for speed, more so for large arguments."
        )
        return self.finish(result)

    # -- sums on the GPU (CuPy) ---------------------------------------------------------------

    def _cupy(self, ctx: Context, result: Result, params: dict[str, Any], todo: set[str]) -> None:
        import cupy as cp
        import numpy as np

        n, runs = int(params["n"]), int(params["runs"])
        fits.require_fit(ctx, n * 4 * 3.2, f"numerics sums over n={n:,}")
        s = result.summary
        with cp.cuda.Device(ctx.device_index):
            mod = cp.RawModule(code=SUMS)
            sms = cp.cuda.Device().attributes["MultiProcessorCount"]
            blocks = max(1, min(8 * sms, -(-n // BLOCK)))
            x = cp.random.default_rng(11).standard_normal(n, dtype=cp.float32) + 0.5
            exact = float(cp.sum(x.astype(cp.float64)))
            scale = float(cp.sum(cp.abs(x.astype(cp.float64))))
            out = cp.empty(1, dtype=cp.float32)
            partial = cp.empty(blocks, dtype=cp.float32)
            atomic_k, part_k = mod.get_function("atomic_sum"), mod.get_function("partial_sums")

            def atomic() -> None:
                out.fill(0)
                atomic_k((blocks,), (BLOCK,), (x, out, cp.int64(n)))

            def fixed() -> None:
                part_k((blocks,), (BLOCK,), (x, partial, cp.int64(n)))
                part_k((1,), (BLOCK,), (partial, out, cp.int64(blocks)))

            times: dict[str, float] = {}
            for cid, fn in (("atomic", atomic), ("fixed-order", fixed)):
                if cid not in todo:
                    continue
                ctx.progress(0.05, f"{cid}: {runs} runs of one sum")
                values = []
                for _ in range(runs):
                    ctx.check_cancelled()
                    fn()
                    values.append(float(out.get()[0]))
                distinct = len({np.float32(v).tobytes() for v in values})
                spread = (max(values) - min(values)) / scale
                err = max(abs(v - exact) for v in values) / scale
                result.verdicts.append(
                    Verdict.check(
                        cid,
                        err,
                        8 * FP32_EPS * math.log2(n),
                        metric="largest error of the sum / sum of |x|",
                        reference="float64 sum",
                        size=f"{n:g}",
                        dtype="fp32",
                    )
                )
                if cid == "fixed-order":
                    result.verdicts.append(
                        Verdict.check(cid, float(distinct - 1), 0.0, metric="distinct results - 1")
                    )
                timing = ctx.timer.measure(fn, sync="cupy")
                m = result_rows.emit(
                    ctx,
                    result,
                    row(
                        cid,
                        f"{n:g}",
                        timing,
                        work=n * 4,
                        unit="GB/s",
                        scale=1e9,
                        dtype="fp32",
                        note=(
                            f"{distinct} distinct result(s) in {runs} runs; spread "
                            f"{spread:.1e} of sum|x|; worst error {err:.1e}"
                        ),
                        distinct=distinct,
                        spread=spread,
                        error=err,
                    ),
                )
                times[cid] = m.time_median_s
                s[f"{cid}_distinct"] = distinct
                s[f"{cid}_spread"] = spread
            if times.get("atomic") and times.get("fixed-order"):
                s["fixed_vs_atomic_time"] = times["fixed-order"] / times["atomic"]
            if todo & {"expf", "fast-expf"}:
                self._expf(ctx, result, mod, todo, cp, np)

    def _expf(
        self, ctx: Context, result: Result, mod: Any, todo: set[str], cp: Any, np: Any
    ) -> None:
        m = 1 << 22
        ctx.progress(0.3, "expf and __expf")
        x = cp.linspace(-80, 80, m, dtype=cp.float32)
        slow, fast = cp.empty_like(x), cp.empty_like(x)
        k = mod.get_function("exps")
        grid = (-(-m // BLOCK),)

        def both() -> None:
            k(grid, (BLOCK,), (x, slow, fast, cp.int64(m)))

        both()
        want = np.exp(cp.asnumpy(x).astype(np.float64))
        timing = ctx.timer.measure(both, sync="cupy")
        for cid, got in (("expf", slow), ("fast-expf", fast)):
            if cid not in todo:
                continue
            g = cp.asnumpy(got).astype(np.float64)
            rel = np.abs(g - want) / want
            worst = float(rel.max())
            small = float(rel[np.abs(cp.asnumpy(x)) <= 1].max())
            result_rows.emit(
                ctx,
                result,
                row(
                    cid,
                    f"{m:g}",
                    timing,
                    work=m * 12,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    note=(
                        f"relative error at most {worst:.1e} over [-80, 80], {small:.1e} over "
                        "[-1, 1] (one launch computes both: the time is theirs together)"
                    ),
                    error=worst,
                    error_small=small,
                ),
            )
            result.summary[f"{cid}_error"] = worst

    # -- index_add_ (torch) ------------------------------------------------------------------

    def _index_add(
        self, ctx: Context, result: Result, params: dict[str, Any], todo: set[str]
    ) -> None:
        import torch

        n, runs, bins = int(params["n"]), int(params["runs"]), 1024
        dev = ctx.torch_device
        g = torch.Generator(device=dev).manual_seed(5)
        src = torch.randn(n, device=dev, generator=g) + 0.5
        idx = torch.randint(0, bins, (n,), device=dev, generator=g)
        exact = torch.zeros(bins, dtype=torch.float64, device=dev).index_add_(0, idx, src.double())
        scale = torch.zeros(bins, dtype=torch.float64, device=dev).index_add_(
            0, idx, src.double().abs()
        )
        out = torch.zeros(bins, device=dev)

        def add() -> None:
            out.zero_()
            out.index_add_(0, idx, src)

        for cid, det in (("index-add", False), ("index-add-det", True)):
            if cid not in todo:
                continue
            ctx.progress(0.5, f"{cid}: {runs} runs")
            with _torch_flags(deterministic=det):
                outs = []
                for _ in range(runs):
                    ctx.check_cancelled()
                    add()
                    outs.append(out.double().clone())
                stack = torch.stack(outs)
                distinct = len({_digest(o.float().cpu().numpy()) for o in outs})
                spread = float(((stack.max(0).values - stack.min(0).values) / scale).max())
                err = float(((stack - exact).abs() / scale).max())
                timing = ctx.timer.measure(add, sync="torch")
            result.verdicts.append(
                Verdict.check(
                    cid,
                    err,
                    8 * FP32_EPS * math.log2(n),
                    metric="largest error of a bin / its sum of |x|",
                    reference="float64 index_add_",
                    size=f"{n:g}",
                    dtype="fp32",
                )
            )
            if det:
                result.verdicts.append(
                    Verdict.check(cid, float(distinct - 1), 0.0, metric="distinct results - 1")
                )
            result_rows.emit(
                ctx,
                result,
                row(
                    cid,
                    f"{n:g}",
                    timing,
                    work=n * 12,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    note=(
                        f"{distinct} distinct result(s) in {runs} runs; largest spread of a bin "
                        f"{spread:.1e} of its sum|x|"
                    ),
                    distinct=distinct,
                    spread=spread,
                    bytes_counted="4 (value) + 8 (index) read per element",
                ),
            )
            result.summary[f"{cid}_distinct"] = distinct
            result.summary[f"{cid}_spread"] = spread
        t = {m.contender: m.time_median_s for m in result.measurements}
        if t.get("index-add") and t.get("index-add-det"):
            result.summary["index_add_det_vs_atomic_time"] = t["index-add-det"] / t["index-add"]

    # -- matmul by dtype (torch) --------------------------------------------------------------

    def _matmuls(
        self, ctx: Context, result: Result, params: dict[str, Any], todo: set[str]
    ) -> None:
        gpu = [c for c in ("fp32", "tf32", "bf16", "fp16") if c in todo]
        cpu = [c for c in ("fp32-cpu", "bf16-cpu") if c in todo]
        if not gpu and not cpu:
            return
        import torch

        errors: dict[str, float] = {}
        for where, ids, size in (
            (ctx.torch_device, gpu, int(params["size"])),
            ("cpu", cpu, int(params["cpu_size"])),
        ):
            if not ids:
                continue
            g = torch.Generator(device=where).manual_seed(3)
            a = torch.rand(size, size, device=where, generator=g) * 2 - 1
            b = torch.rand(size, size, device=where, generator=g) * 2 - 1
            ref = a.double() @ b.double()
            norm = float(ref.norm())
            sync = "torch" if where != "cpu" else "none"
            for cid in ids:
                ctx.progress(0.7, f"matmul {cid} at {size}")
                name = cid.removesuffix("-cpu")
                dtype = {"fp32": torch.float32, "tf32": torch.float32}.get(name)
                dtype = dtype or {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
                x, y = a.to(dtype), b.to(dtype)
                with _torch_flags(tf32=name == "tf32"):
                    c = x @ y
                    err = float((c.double() - ref).norm()) / norm
                    timing = ctx.timer.measure(functools.partial(torch.matmul, x, y), sync=sync)
                errors[cid] = err
                if name == "fp32":
                    result.verdicts.append(
                        Verdict.check(
                            cid,
                            err,
                            1e-5,
                            metric="relative error (Frobenius) vs float64",
                            reference="float64 matmul of the same inputs",
                            size=str(size),
                            dtype="fp32",
                        )
                    )
                result_rows.emit(
                    ctx,
                    result,
                    row(
                        cid,
                        str(size),
                        timing,
                        work=2 * size**3,
                        unit="TFLOP/s",
                        scale=1e12,
                        dtype=name,
                        note=f"relative error {err:.1e} vs float64 (inputs rounded to {name})",
                        error=err,
                    ),
                )
        result.summary["matmul_error"] = errors

    # -- running sums (NumPy, host) -------------------------------------------------------------

    def _running(
        self, ctx: Context, result: Result, params: dict[str, Any], todo: set[str]
    ) -> None:
        import numpy as np

        top = int(params["acc_max"])
        lengths = sorted({min(top, 1 << k) for k in range(10, 31, 4)} | {top})
        rng = np.random.default_rng(2)
        x64 = rng.random(top)
        growth: dict[str, dict[str, float]] = {}
        for cid, dt in (("fp16-running", np.float16), ("fp32-running", np.float32)):
            if cid not in todo:
                continue
            xs = x64.astype(dt)
            growth[cid] = {}
            for length in lengths:
                ctx.progress(0.9, f"{cid}: {length:,} values")
                part = xs[:length]
                got = float(np.add.accumulate(part, dtype=dt)[-1])
                exact = float(part.astype(np.float64).sum())
                err = abs(got - exact) / exact
                growth[cid][str(length)] = err
                timing = ctx.timer.measure(functools.partial(np.add.accumulate, part, dtype=dt))
                result_rows.emit(
                    ctx,
                    result,
                    row(
                        cid,
                        f"{length:g}",
                        timing,
                        work=length,
                        unit="Melem/s",
                        scale=1e6,
                        dtype=np.dtype(dt).name,
                        note=f"relative error {err:.1e} (sum {got:.6g}, exact {exact:.6g})",
                        error=err,
                    ),
                )
        result.summary["running_error"] = growth

    def headline(self, result: Result) -> str:
        s = result.summary
        parts = []
        if "atomic_distinct" in s:
            parts.append(
                f"atomicAdd sum: {s['atomic_distinct']} distinct results in {s['runs']} runs"
            )
            if "fixed-order_distinct" in s:
                parts.append(f"fixed order: {s['fixed-order_distinct']}")
        errs = s.get("matmul_error") or {}
        if "tf32" in errs and "fp32" in errs:
            parts.append(f"matmul error tf32 {errs['tf32']:.1e} vs fp32 {errs['fp32']:.1e}")
        elif "bf16-cpu" in errs and "fp32-cpu" in errs:
            parts.append(f"matmul error bf16 {errs['bf16-cpu']:.1e} vs fp32 {errs['fp32-cpu']:.1e}")
        run16 = (s.get("running_error") or {}).get("fp16-running") or {}
        if run16:
            longest = max(run16, key=int)
            parts.append(f"fp16 running sum of {int(longest):,} values off by {run16[longest]:.0%}")
        return "; ".join(parts)


EXPERIMENT = Numerics()
