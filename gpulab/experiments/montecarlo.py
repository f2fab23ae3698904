"""Monte Carlo pi: throw points at a unit square, count those inside the quarter circle.

pi ~= 4 * inside / samples, with standard error SE = 4 * sqrt(p (1 - p) / samples), p = pi / 4.

Contenders:
- `numpy` and `torch-cpu`: the same recipe on the CPU, in chunks; capped at CPU_CAP samples per
  run (a CPU needs minutes for 1e11). A capped row reports the samples that ran, not those asked
  ("2e+08 of 1e+09" in its size, `samples_run`, `capped` and a note).
- `torch`: the tutorials' recipe on the GPU, two `torch.rand` arrays, a compare and a sum, in
  chunks so memory stays flat for any count (1e12 never runs out of memory), on buffers reused
  in place so the chunking costs no speed (montecarlo_torch.py).
- `cupy-fused`: one RawKernel (kernels/montecarlo.cu): SplitMix64 on a per-sample counter in
  registers, a grid-stride loop, a warp reduction and one atomicAdd per warp. It reads and writes
  no arrays, so its device memory is 8 bytes whatever the count.

Verification: every estimate must land within 5 SE of pi (the verdict's tolerance). Why 5 and not
4: a correct generator lands beyond 4 SE once in 16,000 checks, which across CI runs, bench runs
and the convergence series would be a false alarm now and then; beyond 5 SE happens once in 1.7
million. A result past 4 SE is still logged as suspicious, and the z-score is in each row.
The counters (NumPy, torch, the fused kernel and its NumPy twin) are in montecarlo_counts.py.
"""

from __future__ import annotations

import math
import time
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Series, Verdict
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.montecarlo_counts import FusedKernel, _numpy_count, _torch_count
from gpulab.experiments.montecarlo_torch import TorchCounter, rng_rows, rng_text
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import label

CPU_CAP = 200_000_000  # per run on the CPU: about a second for NumPy on one core
SE_PASS = 5.0  # verdict tolerance, in standard errors (see the docstring)
SE_WARN = 4.0
# There is no calibrated ceiling for this work: the calibration measures copies and matrix
# products, and random-number generation plus a compare is neither. Rows say so.
NO_CEILING = "no calibrated ceiling for this work (random numbers + a compare)"


def standard_error(samples: int) -> float:
    """The standard error of the pi estimate from `samples` points."""
    p = math.pi / 4
    return 4 * math.sqrt(p * (1 - p) / samples)


class MonteCarlo(Experiment):
    """The `montecarlo` experiment: Estimate pi from random points: NumPy, PyTorch (CPU, GPU) and
    one fused CuPy kernel."""

    id = "montecarlo"
    title = "Monte Carlo pi"
    summary = "Estimate pi from random points: NumPy, PyTorch (CPU, GPU) and one fused CuPy kernel."
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
        Contender("numpy", "NumPy (CPU)", "numpy", f"capped at {CPU_CAP:.0e} samples a run"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu", f"capped at {CPU_CAP:.0e} a run"),
        Contender("torch", "PyTorch GPU (two torch.rand arrays)", "torch-cuda"),
        Contender(
            "cupy-fused",
            "CuPy fused kernel (RNG in registers, warp reduce)",
            "cupy",
            "one RawKernel: kernels/montecarlo.cu",
        ),
    )
    bench_params = ({"samples": 1_000_000_000}, {"samples": 100_000_000_000})
    bench_suites = ("core", "full")

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        samples = int(params["samples"])
        seed = int(params["seed"])
        result = self.new_result(ctx, params)
        todo = [c for c in self.contenders if c.id not in result.unavailable]
        fused = FusedKernel(ctx.device_index) if any(c.id == "cupy-fused" for c in todo) else None
        counter = {"calls": 0}
        summary: dict[str, Any] = {}
        steps = len(todo) + 1
        gpu_counter: dict[str, Any] = {}
        for i, contender in enumerate(todo):
            on_cpu = contender.backend in ("numpy", "torch-cpu")
            n = min(samples, CPU_CAP) if on_cpu else samples
            capped = n < samples
            note = f"capped: ran {n:.3g} of the {samples:.3g} samples asked (CPU)" if capped else ""
            size = f"{n:g} of {samples:g}" if capped else f"{samples:g}"
            if note:
                ctx.log(f"{contender.label}: {note}")
            ctx.progress(i / steps, f"{contender.label}: {n:,} samples")
            last: dict[str, int] = {}

            def call(c: Contender = contender, last: dict[str, int] = last, n: int = n) -> None:
                counter["calls"] += 1
                s = seed + counter["calls"]  # fresh points every run
                check = ctx.check_cancelled
                if c.backend == "numpy":
                    last["inside"] = _numpy_count(n, s, check)
                elif c.backend == "torch-cpu":
                    last["inside"] = _torch_count(n, s, "cpu", check)
                elif c.backend == "torch-cuda":
                    if "torch" not in gpu_counter:  # made in the first call: its bytes count
                        gpu_counter["torch"] = TorchCounter(ctx.torch_device, n)
                    last["inside"] = gpu_counter["torch"].count(n, s, check)
                else:
                    assert fused is not None
                    last["inside"] = fused.count(n, s)

            sync = {"torch-cuda": "torch", "cupy": "cupy"}.get(contender.backend, "none")
            base = self._device_bytes_before(contender.backend, ctx)
            # Long runs: one warm-up (the cold call) and one timed run is already honest.
            expected_s = n / {"numpy": 1.5e8, "torch-cpu": 2e8, "torch-cuda": 5e10}.get(
                contender.backend, 5e11
            )
            big = expected_s > 0.5
            timing = ctx.timer.measure(
                call,
                sync=sync,
                min_runs=1 if big else None,
                warmup=1 if big else None,
            )
            dev_bytes = self._device_bytes_used(contender.backend, ctx, base, fused)
            if "torch" in gpu_counter:  # the torch row's parts: its RNG, its writes alone
                for part in rng_rows(ctx, gpu_counter["torch"], n, seed):
                    ctx.measurement(part)
                    result.measurements.append(part)
            gpu_counter.clear()  # its buffers are freed before the next contender runs
            estimate = 4.0 * last["inside"] / n
            se = standard_error(n)
            z = abs(estimate - math.pi) / se
            if z > SE_WARN:
                ctx.log(f"{contender.id}: estimate is {z:.1f} standard errors from pi (suspicious)")
            m = row(
                contender.id,
                size,
                timing,
                work=n,
                unit="G samples/s",
                scale=1e9,
                estimate=estimate,
                error=abs(estimate - math.pi),
                standard_error=se,
                z=z,
                samples_run=n,
                samples_requested=samples,
                capped=capped,
                device_bytes=dev_bytes,
                note=note,
                peak_name=NO_CEILING,
            )
            ctx.measurement(m)
            result.measurements.append(m)
            result.verdicts.append(
                Verdict.check(
                    contender.id,
                    abs(estimate - math.pi),
                    SE_PASS * se,
                    metric="|estimate - pi|",
                    reference=f"{SE_PASS:g} standard errors of {n:.3g} samples",
                    size=size,
                )
            )
            summary[contender.id] = {
                "estimate": estimate,
                "error": abs(estimate - math.pi),
                "standard_error": se,
                "z": z,
                "samples": n,
                "capped": capped,
                "g_samples_per_s": m.throughput,
                "warm_s": timing.median_s,
                "cold_s": timing.cold_s,
                "device_bytes": dev_bytes,
            }
        ctx.progress(len(todo) / steps, "convergence series")
        self._convergence(ctx, result, todo, samples, seed, fused)
        ctx.progress(1.0, "done")
        best_id = next(
            (c for c in ("cupy-fused", "torch", "torch-cpu", "numpy") if c in summary), None
        )
        best = summary.get(best_id, {}) if best_id else {}
        # The estimate comes from the samples that contender ran (a CPU one is capped at
        # CPU_CAP), so its standard error is of those samples, not of the requested count.
        run = int(best.get("samples", samples))
        result.summary = {
            "samples": samples,
            "samples_run": run,
            "estimate_by": best_id,
            "estimate": best.get("estimate", float("nan")),
            "error": best.get("error", float("nan")),
            "standard_error": standard_error(run),
            "estimates": {k: v["estimate"] for k, v in summary.items()},
            "contenders": summary,
        }
        if "cupy-fused" in summary and "torch" in summary:
            result.summary["fused_vs_torch"] = (
                summary["cupy-fused"]["g_samples_per_s"] / summary["torch"]["g_samples_per_s"]
            )
        parts = {m.contender: m.time_median_s for m in result.measurements if "part_of" in m.extra}
        if parts and "torch" in summary:
            t = summary["torch"]["warm_s"]
            result.summary["torch_rand_share"] = parts["torch-rand-only"] / t
            result.summary["torch_fill_share"] = parts["torch-fill-only"] / t
        result.explanation = (
            "Every point is independent, so the work splits across every core the device has. "
            "The torch recipe writes two arrays of random numbers to memory and reads them back "
            "several times: it is memory-bound, and its memory grows with the chunk. The fused "
            "kernel makes each random number in a register, tests it, and only counts: no "
            "arrays, one atomic per warp, so it runs at the speed of the arithmetic. The error "
            "shrinks only as 1/sqrt(samples): 100x more samples buy one more correct digit. "
            "The throughput column is samples per second: points generated, tested and "
            "counted (G samples/s = billions a second), the work that sets how many digits "
            "of pi a second buys. It has no % of peak: the calibration measures copies and "
            "matrix products, and no calibrated ceiling exists for random numbers plus a "
            "compare, so the rows say so rather than borrow an unrelated one; compare the "
            "contenders with each other instead."
        )
        if "torch_rand_share" in result.summary:
            result.explanation += " " + rng_text(result.summary)
        return self.finish(result)

    @staticmethod
    def _device_bytes_before(backend: str, ctx: Context) -> int:
        if backend == "torch-cuda":
            import torch

            torch.cuda.synchronize(ctx.device_index)
            torch.cuda.reset_peak_memory_stats(ctx.device_index)
            return int(torch.cuda.memory_allocated(ctx.device_index))
        return 0

    @staticmethod
    def _device_bytes_used(backend: str, ctx: Context, base: int, fused: Any) -> int | None:
        if backend == "torch-cuda":
            import torch

            return int(torch.cuda.max_memory_allocated(ctx.device_index)) - base
        if backend == "cupy" and fused is not None:
            return int(fused.peak_bytes)
        return None

    def _convergence(
        self,
        ctx: Context,
        result: Result,
        todo: list[Contender],
        samples: int,
        seed: int,
        fused: Any,
    ) -> None:
        """|error| vs samples from one fresh run per decade, with the fastest contender here."""
        ids = [c.id for c in todo]
        if "cupy-fused" in ids:
            who, limit = "cupy-fused", samples
        elif "torch" in ids:
            who, limit = "torch", min(samples, 10_000_000_000)
        else:
            who, limit = (
                ids[0] if ids else "numpy",
                min(samples, 10_000_000 if ctx.quick else CPU_CAP),
            )
        xs: list[float] = []
        errs: list[float] = []
        n = 1000
        k = 0
        t0 = time.perf_counter()
        while n <= limit:
            ctx.check_cancelled()
            s = seed + 1_000_003 + k
            if who == "cupy-fused":
                inside = fused.count(n, s)
            elif who == "torch":
                inside = _torch_count(n, s, ctx.torch_device, ctx.check_cancelled)
            elif who == "torch-cpu":
                inside = _torch_count(n, s, "cpu", ctx.check_cancelled)
            else:
                inside = _numpy_count(n, s, ctx.check_cancelled)
            xs.append(float(n))
            errs.append(abs(4.0 * inside / n - math.pi))
            n *= 10
            k += 1
        ctx.log(
            f"convergence series with {who}: {len(xs)} runs in {time.perf_counter() - t0:.2f} s"
        )
        result.series.append(
            Series(f"|error| ({who})", xs, errs, "samples", "|estimate - pi|", True, True)
        )
        result.series.append(
            Series(
                "standard error",
                xs,
                [standard_error(int(x)) for x in xs],
                "samples",
                "|estimate - pi|",
                True,
                True,
            )
        )

    def headline(self, result: Result) -> str:
        """One line: the estimate of pi, its error in standard errors, and the fastest contender."""
        s = result.summary
        est, err, se = s.get("estimate"), s.get("error"), s.get("standard_error")
        if est is None or err is None or not se:
            return ""
        who = label(self, str(s.get("estimate_by", "")))
        return (
            f"pi ≈ {est:.6f} (error {err:.1e}, {err / se:.1f} standard errors) "
            f"from {int(s.get('samples_run', 0)):,} samples by {who}"
        )


EXPERIMENT = MonteCarlo()
