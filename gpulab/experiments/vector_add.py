"""Vector addition c = a + b: the first exercise, CPU against GPU, verified identical.

Every contender writes into a preallocated output (allocation is not the lesson), the output is
poisoned with NaN before the checked run, and fp32 addition is exactly rounded, so every
contender must match the reference bit for bit. Bytes counted: 3 * n * 4 (read a, read b,
write c). Sizes that would not fit in host RAM (or on the GPU) are refused before anything is
allocated. The CPU work (inputs, reference, checks and the NumPy and PyTorch CPU adds) goes a
block of 16M elements at a time, so a cancel is taken between blocks.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import blocks, ceilings, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import streaming


def host_bytes(n: int) -> int:
    """Host memory of a run: a, b and the reference (3 * 4n), one contender's output at a time
    (4n); the reference is built and every output checked a block at a time."""
    return int(16 * n * 1.05) + fits.HOST_SLACK_BYTES


def device_bytes(n: int) -> int:
    """GPU memory: a, b, c for torch and again for CuPy (torch's allocator keeps its blocks)."""
    return int(2 * 3 * n * 4 * 1.05) + fits.SLACK_BYTES


class VectorAdd(Experiment):
    """The `vector-add` experiment: c = a + b over n float32 elements: NumPy, PyTorch CPU,
    PyTorch GPU, CuPy."""

    id = "vector-add"
    title = "Vector addition"
    summary = "c = a + b over n float32 elements: NumPy, PyTorch CPU, PyTorch GPU, CuPy."
    lesson = "parallel-patterns"
    params = ParamSet(
        (Int("n", 10_000_000, "elements per vector", unit="elements", min=1, max=4e9),)
    )
    contenders = (
        Contender("numpy", "NumPy (CPU)", "numpy"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
        Contender("torch", "PyTorch GPU", "torch-cuda"),
        Contender("cupy", "CuPy", "cupy"),
        Contender(
            "torch-with-copies",
            "PyTorch GPU incl. copies to and from the host",
            "torch-cuda",
            help="the same add, paying for moving a and b over and c back (pageable memory)",
        ),
    )
    bench_params = ({"n": 100_000_000},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import numpy as np

        n = int(params["n"])
        result = self.new_result(ctx, params)
        nbytes = 3 * n * 4
        todo = result_rows.todo(self, result)
        fits.require_host_fit(host_bytes(n), f"vector-add with n={n:,}")
        if any(c.backend in ("torch-cuda", "cupy") for c in todo):
            fits.require_fit(ctx, device_bytes(n), f"vector-add with n={n:,}")
        p = ceilings.peaks(ctx)
        rng = np.random.default_rng()
        # Uniform fp32 values are multiples of 2^-24: their float64 sum is exact, so rounding it
        # to fp32 gives the exactly rounded fp32 sum every correct contender must produce.
        a = blocks.host_random(ctx, n, rng)
        b = blocks.host_random(ctx, n, rng)
        ref = np.empty_like(a)
        for s in ctx.blocks(n, blocks.SMALL_BLOCK):  # no float64 copies of a and b
            ref[s] = (a[s].astype(np.float64) + b[s]).astype(np.float32)
        speed: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), f"{c.label}: {n:,} elements")
            fn, out, sync = self._prepare(ctx, c.id, a, b)
            verification.poison(out, ctx)
            fn()  # the checked run, on a poisoned output
            mismatches = verification.mismatches(out, ref, ctx)
            result.verdicts.append(
                Verdict.check(
                    c.id,
                    float(mismatches),
                    0.0,
                    metric="elements differing from the reference",
                    reference="float64 sum rounded to float32 (exact)",
                    size=f"{n:g}",
                    dtype="fp32",
                )
            )
            timing = ctx.timer.measure(fn, sync=sync)
            # The calibration is of one device: CPU rows get no ceiling when it is the GPU's.
            pk = ceilings.peak_here(p, c.backend, "copy") if c.id != "torch-with-copies" else None
            m = result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    f"{n:g}",
                    timing,
                    work=nbytes,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    peak=pk,
                    peak_name="memory copy (read + written)" if pk else "",
                    bytes_counted="3 * n * 4 (read a, read b, write c)",
                ),
            )
            speed[c.id] = m.time_median_s
            del fn, out
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "bytes": nbytes, "median_s": speed}
        if "numpy" in speed and "torch" in speed:
            result.summary["gpu_speedup_vs_numpy"] = speed["numpy"] / speed["torch"]
        result.explanation = (
            "Adding two vectors does one addition per 12 bytes moved, so every contender is "
            "limited by memory bandwidth, not arithmetic: the GB/s column is the one to read. "
            "The GPU wins by the ratio of its memory bandwidth to the CPU's (HBM against DDR), "
            "not by its core count. The 'incl. copies' row is the catch: moving a and b to the "
            "GPU and c back over PCIe costs far more than the add itself, so a single add is "
            "never worth shipping to the GPU; keep data there and do many operations on it. "
            "Every result matched the exactly rounded float32 sum element for element."
        )
        return self.finish(result)

    def _prepare(self, ctx: Context, cid: str, a: Any, b: Any) -> tuple[Any, Any, str]:
        import numpy as np

        n = len(a)
        if cid == "numpy":
            out = np.empty_like(a)
            add = blocks.blockwise(ctx, n, lambda s: np.add(a[s], b[s], out=out[s]))
            return add, out, "none"
        import torch

        if cid == "torch-cpu":
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            out = torch.empty_like(ta)
            add = blocks.blockwise(ctx, n, lambda s: torch.add(ta[s], tb[s], out=out[s]))
            return add, out, "none"
        if cid == "cupy":
            import cupy as cp

            with cp.cuda.Device(ctx.device_index):
                ca, cb = cp.asarray(a), cp.asarray(b)
                out = cp.empty_like(ca)
            return (lambda: cp.add(ca, cb, out=out)), out, "cupy"
        dev = torch.device(ctx.torch_device)
        if cid == "torch":
            ga, gb = torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev)
            out = torch.empty_like(ga)
            return (lambda: torch.add(ga, gb, out=out)), out, "torch"
        # torch-with-copies: host tensors in, host tensor out, the GPU in between.
        ha, hb = torch.from_numpy(a), torch.from_numpy(b)
        out = torch.empty_like(ha)

        def with_copies() -> None:
            out.copy_(torch.add(ha.to(dev), hb.to(dev)))

        return with_copies, out, "torch"

    def headline(self, result: Result) -> str:
        """One line: the fastest vector add's GB/s, its share of the copy bandwidth and its lead
        over NumPy."""
        return streaming(self, result)


EXPERIMENT = VectorAdd()
