"""Data types: elementwise and matmul throughput for fp64, fp32, tf32, fp16 and bf16.

Inputs are created before the timed region (the seed timed its random generator too), directly
in their dtype. Matrix products are checked on a block of rows against a float64 product of the
same (rounded) inputs, on the CPU, taking B a block of columns at a time; the elementwise add
must match exactly, checked a block at a time. So verification adds no full-size temporaries,
and the fit check counts the inputs and outputs plus a fixed allowance. Flops counted:
2 * size^3; bytes: 3 * n * itemsize.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Choice, Int, List, ParamSet
from gpulab.core.results import Result, Series, Verdict
from gpulab.experiments import backends, blocks, ceilings, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.fp8 import fp8_row
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import times

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
# fp8 is a matmul row only (torch._scaled_mm, experiments/fp8.py): its inputs start in fp32.
CHOICES = (*DTYPES, "fp8")
BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 4}
CHECK_ROWS = 256
CPU_N_CAP = 16_000_000


def fit_bytes(size: int, n: int, dtypes: list[str], ops: tuple[str, ...], *, host: bool) -> int:
    """Memory of a run, on the device it runs on: the matmul's a, b and out (3 size^2 of the
    widest dtype) or the add's x, y and out (3 n), whichever is larger, plus the chunked
    verification's blocks and the libraries' workspaces (a fixed allowance)."""
    width = max((BYTES[d] for d in dtypes), default=4)
    mm = 3 * width * size * size if "matmul" in ops else 0
    if "fp8" in dtypes and "matmul" in ops:  # fp32 a and b, their e4m3 copies, a bf16 out
        mm = max(mm, 16 * size * size)
    ew = (
        3 * width * n
        if "elementwise" in ops and any(d not in ("tf32", "fp8") for d in dtypes)
        else 0
    )
    slack = fits.HOST_SLACK_BYTES if host else fits.SLACK_BYTES
    return int(max(mm, ew) * 1.05) + slack


class Dtypes(Experiment):
    """The `dtypes` experiment: Matmul TFLOP/s and elementwise GB/s per dtype, inputs made
    outside the timing."""

    id = "dtypes"
    title = "Data types and throughput"
    summary = "Matmul TFLOP/s and elementwise GB/s per dtype, inputs made outside the timing."
    lesson = "dtypes-and-tensor-cores"
    params = ParamSet(
        (
            Int("size", 4096, "matmul size (size x size x size) on the GPU", min=16, max=32768),
            Int("cpu_size", 1024, "matmul size on the CPU", min=16, max=8192),
            Int("n", 64_000_000, "elements for the elementwise add", min=1, max=4e9),
            List(
                "dtypes",
                list(CHOICES),
                item="choice",
                choices=CHOICES,
                help="dtypes to run (fp8: a scaled matmul on compute capability 8.9+)",
            ),
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
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch

        result = self.new_result(ctx, params)
        c = result_rows.todo(self, result)[0]  # the GPU when there is one, else the CPU
        if c.id == "torch":
            result.unavailable["torch-cpu"] = "the GPU ran instead (the CPU is far slower)"
        gpu = c.backend == "torch-cuda"
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        size = int(params["size"] if gpu else params["cpu_size"])
        n = int(params["n"] if gpu else min(params["n"], CPU_N_CAP))
        ops = ("matmul", "elementwise") if params["op"] == "both" else (params["op"],)
        dtypes = [d for d in params["dtypes"] if gpu or d not in ("tf32", "fp8")]
        if not gpu and "tf32" in params["dtypes"]:
            result.unavailable["tf32"] = "TF32 is a tensor-core mode of NVIDIA GPUs (Ampere on)"
        if not gpu and "fp8" in params["dtypes"]:
            result.unavailable["matmul-fp8"] = "fp8 matmuls run on GPU tensor cores (sm_89 on)"
        fp8 = "fp8" in dtypes and "matmul" in ops
        what = f"dtypes at size={size}, n={n:,}"
        if gpu:
            fits.require_fit(ctx, fit_bytes(size, n, dtypes, ops, host=False), what)
        else:
            fits.require_host_fit(fit_bytes(size, n, dtypes, ops, host=True), what)
        dtypes = [d for d in dtypes if d != "fp8"]  # its own row, after the others
        p = ceilings.peaks(ctx)

        def make(shape: Any, td: Any, normal: bool = False) -> Any:
            """Random inputs: on the GPU in one call, on the CPU a block at a time."""
            if not gpu:
                return blocks.torch_random(ctx, shape, td, normal=normal)
            return (torch.randn if normal else torch.rand)(shape, device=dev, dtype=td)

        steps = len(ops) * len(dtypes)
        done = 0
        tflops: dict[str, float] = {}
        gbs: dict[str, float] = {}
        burst_tflops: dict[str, float] = {}
        for op in ops:
            for d in dtypes:
                ctx.progress(done / max(steps, 1), f"{op} {d}")
                done += 1
                td = backends.torch_dtype(d)
                if op == "matmul":
                    a = make((size, size), td, normal=True)
                    b = make((size, size), td, normal=True)
                    out = torch.empty(size, size, device=dev, dtype=td)
                    fn = lambda a=a, b=b, out=out: torch.mm(a, b, out=out)  # noqa: E731
                    rows = size if gpu else blocks.matmul_rows(size)
                    if rows < size:  # a long CPU product: rows at a time, cancellable
                        fn = blocks.blockwise(
                            ctx,
                            size,
                            lambda s, a=a, b=b, out=out: torch.mm(a[s], b, out=out[s]),
                            rows,
                        )
                    with backends.tf32_mode(d == "tf32"):
                        verification.poison(out)
                        fn()
                        k = min(CHECK_ROWS, size)
                        result.verdicts.append(
                            verification.matmul_verdict(
                                f"matmul-{d}", out[:k], a[:k], b, d, size=f"{size}", ctx=ctx
                            )
                        )
                        burst = None
                        if gpu:
                            # Single calls with gaps, first: boost clocks, shown for the
                            # lesson but never against the (sustained) calibrated peak.
                            burst = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
                        kw = backends.sustained(ctx, fn, c.backend, always=True)
                        timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend), **kw)
                    pk = ceilings.peak_here(p, c.backend, f"matmul:{d}")
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
                        regime=backends.regime(kw),
                        **({"rows_per_call": rows} if rows < size else {}),
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
                        result_rows.emit(ctx, result, m)
                        m = b_row  # emitted below, right after its sustained row
                    del a, b, out, fn  # fn holds them too: freed before the next dtype
                else:
                    if d == "tf32":
                        continue  # TF32 changes matmuls only; an add is plain fp32
                    x = make(n, td)
                    y = make(n, td)
                    out = torch.empty_like(x)
                    fn = lambda x=x, y=y, out=out: torch.add(x, y, out=out)  # noqa: E731
                    verification.poison(out, ctx)
                    fn()
                    # Both inputs are exact in their dtype, so their float64 sum is exact and
                    # rounding it to the dtype gives the correctly rounded sum. Checked a block
                    # at a time on the device: no float64 copies of x and y.
                    bad = 0
                    for s in ctx.blocks(n, verification.CHUNK if gpu else blocks.SMALL_BLOCK):
                        ref = (x[s].double() + y[s].double()).to(td)
                        bad += int((out[s] != ref).sum().item())
                    del ref

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
                    timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
                    pk = ceilings.peak_here(p, c.backend, "copy")
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
                    del x, y, out, fn
                result_rows.emit(ctx, result, m)
        if fp8:
            ctx.progress(0.98, "matmul fp8 (e4m3, scaled)")

            m8 = fp8_row(ctx, result, torch, dev, size)
            if m8 is not None and m8.throughput:
                tflops["fp8"] = m8.throughput
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
        if tflops.get("fp8") and tflops.get("bf16"):
            result.summary["fp8_over_bf16"] = tflops["fp8"] / tflops["bf16"]
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
        if "fp8" in tflops:
            result.explanation += (
                " The fp8 row is e4m3 through torch._scaled_mm and is not a drop-in dtype: its "
                "inputs were scaled into e4m3's range (max 448) per tensor and the product "
                "scaled back, and its error against the unquantized product is in its note. "
                "There is no calibrated fp8 ceiling, so read it against the bf16 row"
            )
            if result.summary.get("fp8_over_bf16"):
                result.explanation += f": here {result.summary['fp8_over_bf16']:.2f}x bf16's rate"
            result.explanation += "."
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

    def headline(self, result: Result) -> str:
        """One line: the fastest matmul dtype's TFLOP/s and how fp32 compares with fp64."""
        s = result.summary
        tflops = {d: v for d, v in (s.get("matmul_tflops") or {}).items() if v}
        if not tflops:
            return ""
        fp8 = tflops.pop("fp8", None)  # scaled e4m3: not a drop-in dtype, named apart
        if not tflops:
            return f"fp8 (e4m3, scaled) matmul at {fp8:.3g} TFLOP/s" if fp8 else ""
        dtype, best = max(tflops.items(), key=lambda kv: kv[1])
        text = f"fastest matmul on the {str(s.get('device', '')).upper()}: {dtype} at {best:.3g} TFLOP/s"
        if dtype != "fp32" and tflops.get("fp32"):
            text += f", {times(best / tflops['fp32'])} fp32's rate"
        if s.get("fp32_over_fp64"):
            text += f"; fp32 ran at {times(s['fp32_over_fp64'])} fp64's rate"
        if fp8:
            text += f"; fp8 (e4m3, scaled) at {fp8:.3g} TFLOP/s"
        return text


EXPERIMENT = Dtypes()
