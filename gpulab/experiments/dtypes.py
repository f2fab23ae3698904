"""Data types: elementwise and matmul throughput for fp64, fp32, tf32, fp16 and bf16.

Inputs are created before the timed region (the seed timed its random generator too). Matrix
products are checked on a block of rows against a float64 product of the same (rounded) inputs;
the elementwise add must match exactly. Flops counted: 2 * size^3; bytes: 3 * n * itemsize.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Choice, Int, List, ParamSet
from gpulab.core.results import Result, Series
from gpulab.experiments import syllabus_support as sup
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.common import row

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
CHECK_ROWS = 256


class Dtypes(Experiment):
    id = "dtypes"
    title = "Data types and throughput"
    summary = "Matmul TFLOP/s and elementwise GB/s per dtype, inputs made outside the timing."
    lesson = "dtypes-and-tensor-cores"
    params = ParamSet(
        (
            Int("size", 4096, "matmul size (size x size x size) on the GPU", min=16, max=32768),
            Int("cpu_size", 1024, "matmul size on the CPU", min=16, max=8192),
            Int("n", 64_000_000, "elements for the elementwise add", min=1, max=4e9),
            List("dtypes", list(DTYPES), item="choice", choices=DTYPES, help="dtypes to run"),
            Choice("op", "both", ("both", "matmul", "elementwise"), "which operations to time"),
        )
    )
    contenders = (
        Contender("torch", "PyTorch GPU (cuBLAS)", "torch-cuda"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
    )
    bench_params = ({"size": 8192, "cpu_size": 2048, "n": 100_000_000},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        import torch

        result = self.new_result(ctx, params)
        c = sup.todo(self, result)[0]  # the GPU when there is one, else the CPU
        if c.id == "torch":
            result.unavailable["torch-cpu"] = "the GPU ran instead (the CPU is far slower)"
        gpu = c.backend == "torch-cuda"
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        size = int(params["size"] if gpu else params["cpu_size"])
        n = int(params["n"] if gpu else min(params["n"], 16_000_000))
        dtypes = [d for d in params["dtypes"] if gpu or d != "tf32"]
        if not gpu and "tf32" in params["dtypes"]:
            result.unavailable["tf32"] = "TF32 is a tensor-core mode of NVIDIA GPUs (Ampere on)"
        if gpu:
            sup.require_fit(ctx, max(3 * size * size * 8, 3 * n * 8) * 1.2, "dtypes")
        p = sup.peaks(ctx)
        ops = ("matmul", "elementwise") if params["op"] == "both" else (params["op"],)
        steps = len(ops) * len(dtypes)
        done = 0
        tflops: dict[str, float] = {}
        gbs: dict[str, float] = {}
        burst_tflops: dict[str, float] = {}
        for op in ops:
            for d in dtypes:
                ctx.progress(done / max(steps, 1), f"{op} {d}")
                done += 1
                td = sup.torch_dtype(d)
                if op == "matmul":
                    a = torch.randn(size, size, device=dev).to(td)
                    b = torch.randn(size, size, device=dev).to(td)
                    out = torch.empty(size, size, device=dev, dtype=td)
                    fn = lambda a=a, b=b, out=out: torch.mm(a, b, out=out)  # noqa: E731
                    with sup.tf32_mode(d == "tf32"):
                        sup.poison(out)
                        fn()
                        k = min(CHECK_ROWS, size)
                        ref = a[:k].double().cpu() @ b.double().cpu()
                        result.verdicts.append(
                            sup.verdict(f"matmul-{d}", out[:k], ref, d, size=f"{size}")
                        )
                        burst = None
                        if gpu:
                            # Single calls with gaps, first: boost clocks, shown for the
                            # lesson but never against the (sustained) calibrated peak.
                            burst = ctx.timer.measure(fn, sync=sup.sync_kind(c.backend))
                        kw = sup.sustained(ctx, fn, c.backend, always=True)
                        timing = ctx.timer.measure(fn, sync=sup.sync_kind(c.backend), **kw)
                    pk = sup.peak_here(p, c.backend, f"matmul:{d}")
                    m = row(
                        f"matmul-{d}",
                        f"{size}",
                        timing,
                        work=2.0 * size**3,
                        unit="TFLOP/s",
                        scale=1e12,
                        dtype=d,
                        peak=pk,
                        peak_name=f"calibrated matmul {d}" if pk else "",
                        flops_counted="2 * size^3",
                        regime=sup.regime(kw),
                    )
                    tflops[d] = m.throughput or 0.0
                    if burst is not None:
                        b_row = row(
                            f"matmul-{d} single calls",
                            f"{size}",
                            burst,
                            work=2.0 * size**3,
                            unit="TFLOP/s",
                            scale=1e12,
                            dtype=d,
                            flops_counted="2 * size^3",
                            regime="single calls with gaps (boost clocks)",
                            note="boost clocks between calls: not comparable with the peak",
                        )
                        burst_tflops[d] = b_row.throughput or 0.0
                        sup.emit(ctx, result, m)
                        m = b_row  # emitted below, right after its sustained row
                    del a, b, out
                else:
                    if d == "tf32":
                        continue  # TF32 changes matmuls only; an add is plain fp32
                    x = torch.rand(n, device=dev).to(td)
                    y = torch.rand(n, device=dev).to(td)
                    out = torch.empty_like(x)
                    fn = lambda x=x, y=y, out=out: torch.add(x, y, out=out)  # noqa: E731
                    sup.poison(out)
                    fn()
                    # Both inputs are exact in their dtype; the rounded sum is exact too.
                    ref = (x.double() + y.double()).to(td)
                    bad = int((out != ref).sum().item())
                    from gpulab.core.results import Verdict

                    result.verdicts.append(
                        Verdict.check(
                            f"add-{d}",
                            float(bad),
                            0.0,
                            metric="elements differing from the rounded float64 sum",
                            reference="float64 sum rounded to the dtype",
                            size=f"{n:g}",
                            dtype=d,
                        )
                    )
                    timing = ctx.timer.measure(fn, sync=sup.sync_kind(c.backend))
                    pk = sup.peak_here(p, c.backend, "copy")
                    m = row(
                        f"add-{d}",
                        f"{n:g}",
                        timing,
                        work=3.0 * n * x.element_size(),
                        unit="GB/s",
                        scale=1e9,
                        dtype=d,
                        peak=pk,
                        peak_name="memory copy (read + written)" if pk else "",
                        bytes_counted="3 * n * itemsize",
                        elements_per_s=n / timing.median_s,
                    )
                    gbs[d] = m.throughput or 0.0
                    del x, y, out
                sup.emit(ctx, result, m)
        ctx.progress(1.0, "done")
        if tflops:
            result.series.append(
                Series(
                    "matmul", list(range(len(tflops))), list(tflops.values()), "dtype", "TFLOP/s"
                )
            )
        result.summary = {
            "device": "gpu" if gpu else "cpu",
            "size": size,
            "n": n,
            "matmul_tflops": tflops,
            "matmul_single_call_tflops": burst_tflops,
            "add_gbs": gbs,
        }
        if tflops.get("fp32") and tflops.get("fp64"):
            result.summary["fp32_over_fp64"] = tflops["fp32"] / tflops["fp64"]
        result.explanation = (
            "Matrix products are compute-bound, so their speed follows the hardware unit that "
            "runs each dtype: tensor cores handle tf32, fp16 and bf16 at many times the fp32 "
            "rate, while plain fp32 runs on the ordinary cores. fp64 depends on the GPU: "
            "data-centre parts (A100, H100) have fp64 tensor cores close to their fp32 rate, "
            "consumer cards run fp64 at 1/32 or 1/64 of fp32, so 'fp32 is twice as fast as "
            "fp64' is true of neither. The elementwise add is memory-bound: its time follows "
            "bytes, so halving the element size doubles elements per second while GB/s stays "
            "near the memory's limit. Inputs were made before the timing; a benchmark that "
            "creates them inside the timed call measures the random generator too."
        )
        if burst_tflops:
            gains = {d: burst_tflops[d] / tflops[d] for d in burst_tflops if tflops.get(d)}
            top = max(gains, key=gains.__getitem__, default=None)
            result.explanation += (
                " Each matmul was timed as the calibration times its peak: back to back after "
                "an untimed warm-up, so the clocks have settled to what the power limit allows "
                "and the % of peak compares like with like."
            )
            if top is not None and gains[top] > 1.02:
                result.explanation += (
                    f" The 'single calls' rows time the same product one call at a time with "
                    f"gaps: {top} ran {100 * (gains[top] - 1):.0f}% faster that way, on boost "
                    "clocks a GPU cannot hold under sustained load; quote the sustained figure."
                )
        return self.finish(result)


EXPERIMENT = Dtypes()
