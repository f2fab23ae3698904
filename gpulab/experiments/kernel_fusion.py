"""Kernel fusion: (x + 1) * 2 - 3 as three kernels (eager) vs one (fused).

Eager PyTorch and CuPy launch one kernel per operator, each reading and writing n floats: the
chain moves 6 * n * 4 bytes. A fused kernel reads x once and writes y once: 2 * n * 4. GB/s is
reported over the 2 * n * 4 bytes the computation needs, so eager rows show how much of the
memory's time they waste; `bytes_moved` states what each really moves.

On the CPU the work goes a block of 16M elements at a time, so a cancel is taken between
blocks; a block's temporaries (64 MiB each) are far larger than a CPU's cache, so an eager
chain still moves its bytes through memory, as it does in one call.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Bool, Int, ParamSet
from gpulab.core.results import Result
from gpulab.experiments import backends, blocks, ceilings, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import label, streaming, times

ELEMENTWISE_SRC = "y = (x + 1.0f) * 2.0f - 3.0f"


def _chain(x: Any) -> Any:
    return (x + 1) * 2 - 3


def fit_bytes(n: int, *, host: bool) -> int:
    """Host: x (4n), the float64 reference (8n, made in place) and an eager chain's x + 1,
    its * 2 and the result (the result kept for the check): 8n more. Device: torch's eager
    chain (x and two temporaries, kept by its caching allocator) and CuPy's again: 6 * 4n.
    Checks go a block at a time."""
    if host:
        return int(20 * n * 1.05) + fits.HOST_SLACK_BYTES
    return int(24 * n * 1.05) + fits.SLACK_BYTES


class KernelFusion(Experiment):
    """The `kernel-fusion` experiment: (x + 1) * 2 - 3: eager (3 kernels) vs cupy.fuse,
    ElementwiseKernel, torch.compile."""

    id = "kernel-fusion"
    title = "Kernel fusion"
    summary = "(x + 1) * 2 - 3: eager (3 kernels) vs cupy.fuse, ElementwiseKernel, torch.compile."
    lesson = "performance-regimes"
    params = ParamSet(
        (
            Int("n", 50_000_000, "elements", unit="elements", min=1, max=4e9),
            Bool("compile", True, "include torch.compile (its first call compiles: seconds)"),
        )
    )
    contenders = (
        Contender("torch-eager", "PyTorch eager (3 kernels)", "torch-cuda"),
        Contender("torch-compile", "torch.compile (fused by Inductor)", "torch-cuda"),
        Contender("cupy-eager", "CuPy eager (3 kernels)", "cupy"),
        Contender("cupy-fuse", "cupy.fuse (1 kernel)", "cupy"),
        Contender("cupy-elementwise", "cupy.ElementwiseKernel (1 kernel)", "cupy"),
        Contender("numpy", "NumPy (3 passes, temporaries)", "numpy"),
        Contender("torch-cpu", "PyTorch CPU eager", "torch-cpu"),
        Contender("torch-cpu-compile", "torch.compile on the CPU", "torch-cpu"),
    )
    bench_params = ({"n": 100_000_000, "compile": True},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import numpy as np

        n = int(params["n"])
        result = self.new_result(ctx, params)
        if ctx.has_cuda:
            result.unavailable.setdefault("torch-cpu-compile", "the GPU compile row ran instead")
        if not params["compile"]:
            for cid in ("torch-compile", "torch-cpu-compile"):
                result.unavailable.setdefault(cid, "skipped: compile=false")
        todo = result_rows.todo(self, result)
        what = f"kernel-fusion with n={n:,}"
        fits.require_host_fit(fit_bytes(n, host=True), what)
        if any(c.backend in ("torch-cuda", "cupy") for c in todo):
            fits.require_fit(ctx, fit_bytes(n, host=False), what)
        p = ceilings.peaks(ctx)
        host = blocks.host_random(ctx, n, np.random.default_rng())
        ref = np.empty(n, dtype=np.float64)
        for s in ctx.blocks(n, blocks.SMALL_BLOCK):
            ref[s] = host[s]
            ref[s] += 1  # in place: no float64 temporaries
            ref[s] *= 2
            ref[s] -= 3
        gbs: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), c.label)
            try:
                fn, kernels, dest = self._prepare(ctx, c.id, host)
                if dest is not None:
                    verification.poison(dest)  # written in place: an element it skips stays NaN
                out = blocks.joined(fn())  # the checked call (torch.compile: also the compile)
            except Exception as exc:  # torch.compile can fail for reasons outside our code
                if "compile" not in c.id:
                    raise
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                result.unavailable[c.id] = f"torch.compile failed here: {first[:200]}"
                ctx.log(result.unavailable[c.id])
                continue
            result.verdicts.append(
                verification.verdict(c.id, out, ref, "fp32", size=f"{n:g}", ctx=ctx)
            )
            del out
            timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
            pk = ceilings.peak_here(p, c.backend, "copy")
            m = result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    f"{n:g}",
                    timing,
                    work=2 * n * 4,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    peak=pk,
                    peak_name="memory copy (read + written)" if pk else "",
                    bytes_counted="2 * n * 4 (x read once, y written once)",
                    kernels=kernels,
                    bytes_moved=(2 * n * 4) * (3 if kernels == 3 else 1),
                ),
            )
            gbs[c.id] = m.throughput or 0.0
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "gbs": gbs}
        for fused in ("torch-compile", "cupy-fuse", "cupy-elementwise"):
            eager = "torch-eager" if fused.startswith("torch") else "cupy-eager"
            if gbs.get(fused) and gbs.get(eager):
                result.summary[f"{fused}_over_{eager}"] = gbs[fused] / gbs[eager]
        result.explanation = (
            "(x + 1) * 2 - 3 is three kernels in eager PyTorch and CuPy, not one: each operator "
            "reads its input from memory and writes its result back, so the chain moves three "
            "times the bytes it needs, and elementwise work is memory-bound, so it takes about "
            "three times as long. Fusion (cupy.fuse, an ElementwiseKernel you write, or "
            "torch.compile generating one Triton kernel) keeps the intermediates in registers: "
            "one read of x, one write of y. torch.compile pays seconds to compile on the first "
            "call, which is why it is timed warm here and why it suits code that runs many "
            "times."
        )
        return self.finish(result)

    def _prepare(self, ctx: Context, cid: str, host: Any) -> tuple[Any, int, Any]:
        """(fn returning y, kernels it launches, the preallocated y it writes or None).

        Contenders that allocate a fresh y on every call return None; one that writes into a
        preallocated y returns it, to be poisoned before the checked call.
        """
        n = len(host)
        if cid == "numpy":
            return blocks.blockwise(ctx, n, lambda s: _chain(host[s])), 3, None
        if cid.startswith("cupy"):
            import cupy as cp

            with cp.cuda.Device(ctx.device_index):
                x = cp.asarray(host)
            if cid == "cupy-eager":
                return (lambda: _chain(x)), 3, None
            if cid == "cupy-fuse":
                fused = cp.fuse(_chain)
                return (lambda: fused(x)), 1, None
            kernel = cp.ElementwiseKernel("float32 x", "float32 y", ELEMENTWISE_SRC, "gpulab_chain")
            with cp.cuda.Device(ctx.device_index):
                y = cp.empty_like(x)
            return (lambda: kernel(x, y)), 1, y
        import torch

        dev = torch.device(
            ctx.torch_device if cid.startswith("torch-") and "cpu" not in cid else "cpu"
        )
        x = torch.from_numpy(host).to(dev)
        on_cpu = dev.type == "cpu"
        if cid in ("torch-eager", "torch-cpu"):
            if on_cpu:
                return blocks.blockwise(ctx, n, lambda s: _chain(x[s])), 3, None
            return (lambda: _chain(x)), 3, None
        compiled = torch.compile(_chain, dynamic=False)
        if on_cpu:  # a last, shorter block compiles once more, in the checked call
            return blocks.blockwise(ctx, n, lambda s: compiled(x[s])), 1, None
        return (lambda: compiled(x)), 1, None

    def headline(self, result: Result) -> str:
        """One line: the largest fused-over-eager gain, or the streaming rate when none was
        measured."""
        gains = {k: v for k, v in result.summary.items() if "_over_" in k and v}
        if not gains:
            return streaming(self, result)
        key, x = max(gains.items(), key=lambda kv: kv[1])
        fused, eager = key.split("_over_")
        return f"{label(self, fused)} ran at {times(x)} the rate of {label(self, eager)}"


EXPERIMENT = KernelFusion()
