"""Create on the device vs create on the CPU and move: where the time actually goes.

`torch.rand(n).to("cuda")` pays twice: the CPU's random generator fills n values, then PCIe
carries them over. This experiment times each part alone (the CPU rand; the transfer of an
existing tensor) and the whole, against `torch.rand(n, device="cuda")`, which does neither.
The CPU's rand runs as torch.rand does (torch.empty, then uniform_), a block of 2M values at a
time, so a cancel is taken between blocks.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import backends, blocks, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import on_gpu_else_cpu


def host_bytes(n: int) -> int:
    """Host memory: the transfer's source (4n) and one more n-element tensor at a time (a CPU
    rand, or the host copy the transfer is checked against); checks go a block at a time."""
    return int(8 * n * 1.05) + fits.HOST_SLACK_BYTES


def uniform_check(cid: str, x: Any, n: int, ctx: Context | None = None) -> Verdict:
    """Values in [0, 1) with a mean within 6 standard errors of 1/2."""
    lo, hi = math.inf, -math.inf
    total = 0.0
    for s in ctx.blocks(n, verification.CHUNK) if ctx else [slice(0, n)]:
        block = x[s]  # the mean in float64, without a float64 copy of x
        lo, hi = min(lo, float(block.min())), max(hi, float(block.max()))
        total += float(block.double().sum())
    mean = total / n
    se = math.sqrt(1 / 12 / n)
    err = abs(mean - 0.5) if (lo >= 0.0 and hi < 1.0) else math.inf
    return Verdict.check(
        cid,
        err,
        6 * se,
        metric="|mean - 1/2| (inf if a value is outside [0, 1))",
        reference="uniform [0, 1): 6 standard errors",
        size=f"{n:g}",
        dtype="fp32",
    )


class CreateOnDevice(Experiment):
    """The `create-on-device` experiment: torch.rand on the GPU vs torch.rand on the CPU then
    .to(device), split into parts."""

    id = "create-on-device"
    title = "Create tensors on the device"
    summary = "torch.rand on the GPU vs torch.rand on the CPU then .to(device), split into parts."
    lesson = "pytorch-on-the-gpu"
    params = ParamSet(
        (Int("n", 10_000_000, "random float32 values to create", unit="elements", min=1, max=4e9),)
    )
    contenders = (
        Contender("on-device", "torch.rand(n, device='cuda')", "torch-cuda"),
        Contender("cpu-rand", "torch.rand(n) on the CPU alone (the RNG's cost)", "torch-cpu"),
        Contender("transfer", "x_cpu.to('cuda') alone (the transfer's cost)", "torch-cuda"),
        Contender("cpu-then-move", "torch.rand(n).to('cuda'): both", "torch-cuda"),
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
        fits.require_host_fit(host_bytes(n), f"create-on-device with n={n:,}")
        if ctx.has_cuda:
            fits.require_fit(
                ctx, 3 * n * 4 * 1.05 + fits.SLACK_BYTES, f"create-on-device with n={n:,}"
            )
        dev = torch.device(ctx.torch_device)
        host = blocks.torch_random(ctx, n)  # the transfer's source, made outside the timing
        times: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), c.label)
            if c.id == "on-device":
                fn = lambda: torch.rand(n, device=dev)  # noqa: E731
            elif c.id == "cpu-rand":
                fn = lambda: blocks.torch_random(ctx, n)  # noqa: E731
            elif c.id == "transfer":
                fn = lambda: host.to(dev)  # noqa: E731
            else:
                fn = lambda: blocks.torch_random(ctx, n).to(dev)  # noqa: E731
            out = fn()
            if c.id == "transfer":
                bad = verification.mismatches(out, host.numpy(), ctx)
                result.verdicts.append(
                    Verdict.check(
                        c.id, float(bad), 0.0, metric="elements differing", reference="source"
                    )
                )
            else:
                result.verdicts.append(uniform_check(c.id, out, n, ctx))
            del out
            timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
            m = result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    f"{n:g}",
                    timing,
                    work=n * 4,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    bytes_counted="n * 4 (bytes created or moved)",
                ),
            )
            times[c.id] = m.time_median_s
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "median_s": times}
        if "on-device" in times and "cpu-then-move" in times:
            result.summary["speedup_on_device"] = times["cpu-then-move"] / times["on-device"]
        if {"cpu-rand", "transfer", "cpu-then-move"} <= times.keys():
            result.summary["rng_share"] = times["cpu-rand"] / times["cpu-then-move"]
            result.summary["transfer_share"] = times["transfer"] / times["cpu-then-move"]
        result.explanation = (
            "Making data on the CPU and moving it pays for two slow things: the CPU's random "
            "generator (a few cores filling n values) and a pageable copy over PCIe. The GPU's "
            "generator fills the same n values in its own memory at hundreds of GB/s, so "
            "creating on the device is usually one to two orders of magnitude faster. The split "
            "rows show which part dominates here: the rand and the transfer add up to the total. "
            "Write device-agnostic code that passes device= to the factory functions."
        )
        if not ctx.has_cuda:
            result.explanation += (
                " Only the CPU random generator ran here: the device rows need a GPU."
            )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the speedup of creating the tensor on the GPU over torch.rand then .to(), or
        the CPU time."""
        s = result.summary
        return on_gpu_else_cpu(
            s,
            "speedup_on_device",
            "creating the tensor on the GPU was {x} faster than torch.rand on the CPU then .to('cuda')",
            ("median_s", "cpu-rand"),
            lambda t: f"torch.rand({int(s['n']):,}) on the CPU took {t}",
        )


EXPERIMENT = CreateOnDevice()
