"""Round trips: moving data GPU -> CPU -> GPU every step vs keeping it on the device.

The same arithmetic (x = x * a + b, `steps` times) runs three ways: on the device throughout
(one copy back at the end), with a trip to the host and back every step (the habit of calling
`.cpu()` or `.item()` in a loop), and on the CPU. The result must be the same every way.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result
from gpulab.experiments import backends, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import on_gpu_else_cpu

A, B = 0.999, 0.001


def fit_bytes(n: int, *, host: bool) -> int:
    """Host: x0 (4n), the float64 reference (8n) and a run's tensors (x, x * a, the result:
    12n). Device: x, x * a and the result (12n). Checks go a block at a time."""
    per = 24 if host else 12
    return int(per * n * 1.05) + (fits.HOST_SLACK_BYTES if host else fits.SLACK_BYTES)


def _steps(x: Any, steps: int, dev: Any, trips: bool) -> Any:
    for _ in range(steps):
        x = x * A + B
        if trips:
            x = x.cpu().to(dev)
    return x


class RoundTrips(Experiment):
    """The `round-trips` experiment: GPU -> CPU -> GPU every step vs staying on the device, for
    the same arithmetic."""

    id = "round-trips"
    title = "Transfer round trips"
    summary = "GPU -> CPU -> GPU every step vs staying on the device, for the same arithmetic."
    lesson = "transfers"
    params = ParamSet(
        (
            Int("n", 1_000_000, "elements in the tensor", unit="elements", min=1, max=1e9),
            Int("steps", 100, "steps of x = x * a + b", min=1, max=100_000),
        )
    )
    contenders = (
        Contender("stay-on-device", "stay on the GPU, copy back once", "torch-cuda"),
        Contender("round-trip", "GPU -> CPU -> GPU every step", "torch-cuda"),
        Contender("cpu", "all on the CPU", "torch-cpu"),
    )
    bench_params = ({"n": 1_000_000, "steps": 100},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import numpy as np
        import torch

        n, steps = int(params["n"]), int(params["steps"])
        result = self.new_result(ctx, params)
        todo = result_rows.todo(self, result)
        what = f"round-trips with n={n:,}"
        fits.require_host_fit(fit_bytes(n, host=True), what)
        if any(c.backend == "torch-cuda" for c in todo):
            fits.require_fit(ctx, fit_bytes(n, host=False), what)
        x0 = torch.rand(n)
        ref = x0.numpy().astype(np.float64)
        for _ in range(steps):  # in place: no float64 temporaries
            ref *= A
            ref += B
        per_step: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), c.label)
            dev = torch.device(ctx.torch_device if c.backend == "torch-cuda" else "cpu")
            xd = x0.to(dev)
            trips = c.id == "round-trip"

            def fn(xd: Any = xd, dev: Any = dev, trips: bool = trips) -> Any:
                return _steps(xd, steps, dev, trips).cpu()

            result.verdicts.append(
                verification.verdict(c.id, fn(), ref, "fp32", size=f"{n:g} x {steps}")
            )
            timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
            m = result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    f"{n:g} x {steps}",
                    timing,
                    work=steps,
                    unit="steps/s",
                    dtype="fp32",
                    time_per_step_s=timing.median_s / steps,
                ),
            )
            per_step[c.id] = m.time_median_s / steps
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "steps": steps, "time_per_step_s": per_step}
        if "round-trip" in per_step and "stay-on-device" in per_step:
            result.summary["round_trip_penalty"] = (
                per_step["round-trip"] / per_step["stay-on-device"]
            )
        result.explanation = (
            "Every trip to the host copies the whole tensor over PCIe twice and forces the CPU "
            "to wait for the GPU (a synchronization), which empties the GPU's queue of work. "
            "The arithmetic per step takes microseconds on the GPU; the trips take far longer, "
            "so the round-trip version can end up slower than doing it all on the CPU. Keep "
            "tensors on the device between steps and bring back only what you must, once "
            "(and note that .item(), print(tensor) and .numpy() are trips too)."
        )
        if not ctx.has_cuda:
            result.explanation += " Only the CPU version ran here: the others need a GPU."
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: how much slower a trip to the CPU and back every step was than staying on
        the GPU."""
        return on_gpu_else_cpu(
            result.summary,
            "round_trip_penalty",
            "a trip to the CPU and back every step was {x} slower than staying on the GPU",
            ("time_per_step_s", "cpu"),
            lambda t: f"all on the CPU: {t} a step",
        )


EXPERIMENT = RoundTrips()
