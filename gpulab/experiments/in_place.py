"""In-place vs out-of-place: x.add_(y) against x = x + y, in time and peak memory.

Out-of-place allocates a new n-element result each call (from PyTorch's caching allocator on the
GPU, so the allocation itself is cheap once warm); in-place writes into x. Both move the same
bytes: read x, read y, write the result (3 * n * 4).
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result
from gpulab.experiments import backends, ceilings, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import duration, measured


def host_bytes(n: int) -> int:
    """Host memory: x0 and y0 (8n), the float64 reference (8n, made without a float64 copy of
    y0), and a CPU contender's x and out-of-place result (8n); checks go a block at a time."""
    return int(24 * n * 1.05) + fits.HOST_SLACK_BYTES


class InPlace(Experiment):
    """The `in-place` experiment: x.add_(y) vs x = x + y: time and peak memory."""

    id = "in-place"
    title = "In-place operations"
    summary = "x.add_(y) vs x = x + y: time and peak memory."
    lesson = "memory-management"
    params = ParamSet(
        (Int("n", 50_000_000, "elements in x and y", unit="elements", min=1, max=4e9),)
    )
    contenders = (
        Contender("in-place-gpu", "x.add_(y) (GPU)", "torch-cuda"),
        Contender("out-of-place-gpu", "x = x + y (GPU)", "torch-cuda"),
        Contender("in-place-cpu", "x.add_(y) (CPU)", "torch-cpu"),
        Contender("out-of-place-cpu", "x = x + y (CPU)", "torch-cpu"),
    )
    bench_params = ({"n": 100_000_000},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch

        n = int(params["n"])
        result = self.new_result(ctx, params)
        todo = result_rows.todo(self, result)
        fits.require_host_fit(host_bytes(n), f"in-place with n={n:,}")
        if ctx.has_cuda:
            fits.require_fit(ctx, 4 * n * 4 * 1.05 + fits.SLACK_BYTES, f"in-place with n={n:,}")
        p = ceilings.peaks(ctx)
        x0, y0 = torch.rand(n), torch.rand(n)
        ref = x0.double().add_(y0)  # in float64: y0 is widened on the fly, not copied
        peaks_mib: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), c.label)
            gpu = c.backend == "torch-cuda"
            dev = torch.device(ctx.torch_device if gpu else "cpu")
            state = {"x": x0.to(dev, copy=True)}  # never alias x0: in-place would change it
            y = y0.to(dev)
            inplace = c.id.startswith("in-place")

            def fn(state: dict[str, Any] = state, y: Any = y, inplace: bool = inplace) -> None:
                if inplace:
                    state["x"].add_(y)
                else:
                    state["x"] = state["x"] + y

            # The checked call, on fresh inputs.
            fn()
            result.verdicts.append(
                verification.verdict(c.id, state["x"], ref, "fp32", size=f"{n:g}")
            )
            extra: dict[str, Any] = {}
            if gpu:
                torch.cuda.synchronize(dev)
                base = torch.cuda.memory_allocated(dev)
                torch.cuda.reset_peak_memory_stats(dev)
                fn()
                torch.cuda.synchronize(dev)
                over = torch.cuda.max_memory_allocated(dev) - base
                extra["peak_extra_bytes"] = int(over)
                peaks_mib[c.id] = over / 2**20
            else:
                extra["allocates_bytes"] = 0 if inplace else n * 4
            # Repeated adds keep x growing: values stay finite (at most n * repeats), fine.
            timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
            result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    f"{n:g}",
                    timing,
                    work=3 * n * 4,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    peak=ceilings.peak_here(p, c.backend, "copy"),
                    peak_name="memory copy (read + written)",
                    bytes_counted="3 * n * 4",
                    **extra,
                ),
            )
            del state, y
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "peak_extra_mib": peaks_mib, "tensor_mib": n * 4 / 2**20}
        result.explanation = (
            "Both versions read x and y and write n results, so they take about the same time: "
            "in-place is not a speed trick. The difference is memory: x = x + y needs a second "
            "n-element buffer alive while the result is computed (the peak column shows one "
            "extra tensor's worth on the GPU), while x.add_(y) needs none. That matters when "
            "you are near the memory limit. The catch: autograd needs some inputs unchanged for "
            "the backward pass, and modifying them in place raises an error, so use in-place "
            "ops on tensors that are not part of a graph."
        )
        if not ctx.has_cuda:
            result.explanation += (
                " Peak memory is read from PyTorch's CUDA allocator, so on the CPU only the "
                "allocation each version makes is listed (0 or n * 4 bytes)."
            )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: x.add_(y) against x = x + y in time and extra peak memory, GPU first."""
        peaks = result.summary.get("peak_extra_mib") or {}
        rows = {m.contender: m for m in measured(result)}
        for where in ("gpu", "cpu"):
            inp, out = rows.get(f"in-place-{where}"), rows.get(f"out-of-place-{where}")
            if inp is None or out is None:
                continue
            text = (
                f"x.add_(y) took {duration(inp.time_median_s)}, x = x + y "
                f"{duration(out.time_median_s)} on the {where.upper()}"
            )
            extra = peaks.get(f"out-of-place-{where}")
            if extra is not None:
                text += f"; x = x + y needed {extra:.3g} MiB more memory"
            return text
        return ""


EXPERIMENT = InPlace()
