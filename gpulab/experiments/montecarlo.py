"""Monte Carlo pi: throw points at a unit square, count those inside the quarter circle.

pi ~= 4 * inside / samples, with standard error 4 * sqrt(p (1 - p) / samples), p = pi / 4.
Every contender works in chunks so memory stays flat however many samples are asked for.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Series, Verdict
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.common import row

CHUNK = 1 << 24  # 16M points per chunk: 128 MiB of fp32 coordinates at most


def standard_error(samples: int) -> float:
    p = math.pi / 4
    return 4 * math.sqrt(p * (1 - p) / samples)


def _numpy_count(samples: int, seed: int) -> int:
    import numpy as np

    rng = np.random.default_rng(seed)
    inside = 0
    left = samples
    while left > 0:
        n = min(left, CHUNK)
        x = rng.random(n, dtype=np.float32)
        y = rng.random(n, dtype=np.float32)
        inside += int(np.count_nonzero(x * x + y * y <= 1.0))
        left -= n
    return inside


def _torch_count(samples: int, seed: int, device: str) -> int:
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    inside = torch.zeros((), dtype=torch.int64, device=device)
    left = samples
    while left > 0:
        n = min(left, CHUNK)
        # The tutorials' recipe: two uniform arrays, a compare, a sum.
        x = torch.rand(n, device=device, generator=gen)
        y = torch.rand(n, device=device, generator=gen)
        inside += (x * x + y * y <= 1.0).sum()
        left -= n
    return int(inside.item())


class MonteCarlo(Experiment):
    id = "montecarlo"
    title = "Monte Carlo pi"
    summary = "Estimate pi from random points; race NumPy, PyTorch CPU and PyTorch GPU."
    lesson = "applications"
    params = ParamSet(
        (
            Int(
                "samples", 10_000_000, "random points to throw", unit="samples", min=1000, max=1e12
            ),
            Int("seed", 0, "random seed (each timed run adds its run number)", min=0, max=2**31),
        )
    )
    contenders = (
        Contender("numpy", "NumPy (CPU)", "numpy"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
        Contender("torch", "PyTorch GPU (two torch.rand arrays)", "torch-cuda"),
    )

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        samples = int(params["samples"])
        seed = int(params["seed"])
        result = self.new_result(ctx, params)
        todo = [c for c in self.contenders if c.id not in result.unavailable]
        counter = {"calls": 0}
        estimates: dict[str, float] = {}
        for i, contender in enumerate(todo):
            ctx.progress(i / len(todo), f"{contender.label}: {samples:,} samples")
            last: dict[str, int] = {}

            def call(c: Contender = contender, last: dict[str, int] = last) -> None:
                counter["calls"] += 1
                s = seed + counter["calls"]
                if c.backend == "numpy":
                    last["inside"] = _numpy_count(samples, s)
                elif c.backend == "torch-cpu":
                    last["inside"] = _torch_count(samples, s, "cpu")
                else:
                    last["inside"] = _torch_count(samples, s, ctx.torch_device)

            big = samples >= 1e9
            timing = ctx.timer.measure(
                call,
                sync="torch" if contender.backend == "torch-cuda" else "none",
                min_runs=1 if big else None,
                warmup=1 if big else None,
            )
            estimate = 4.0 * last["inside"] / samples
            estimates[contender.id] = estimate
            m = row(
                contender.id,
                f"{samples:g}",
                timing,
                work=samples,
                unit="G samples/s",
                scale=1e9,
                estimate=estimate,
            )
            ctx.measurement(m)
            result.measurements.append(m)
            se = standard_error(samples)
            result.verdicts.append(
                Verdict.check(
                    contender.id,
                    abs(estimate - math.pi),
                    4 * se,
                    metric="|estimate - pi|",
                    reference="4 standard errors",
                    size=f"{samples:g}",
                )
            )
        ctx.progress(1.0, "done")
        se = standard_error(samples)
        best = next(iter(estimates.values()), float("nan"))
        result.summary = {
            "samples": samples,
            "estimate": best,
            "error": abs(best - math.pi),
            "standard_error": se,
            "estimates": estimates,
        }
        result.series.append(
            Series(
                "expected error",
                [float(n) for n in (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9)],
                [standard_error(int(n)) for n in (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9)],
                "samples",
                "standard error",
                log_x=True,
                log_y=True,
            )
        )
        result.explanation = (
            "Every point is independent, so the work splits across as many cores as the device "
            "has. The error shrinks only as 1/sqrt(samples): 100x more samples buy one more "
            "correct digit, which is why the GPU's throughput matters here."
        )
        return self.finish(result)


EXPERIMENT = MonteCarlo()
