"""The matmul race: pure Python, NumPy, torch on the CPU, torch on the GPU and CuPy, per dtype.

C = A @ B for square n x n matrices: 2 n^3 flops. Inputs are random, fresh every run (from the
`seed` param, or a fresh seed recorded in the result when it is 0), made directly in their dtype
before the timed region; GPU work is timed with CUDA events after warm-up. Each row is verified
against a float64 product of the same (already rounded) inputs by the relative Frobenius norm;
for n > REF_ROWS only REF_ROWS rows are checked, which keeps the CPU reference cheap and still
catches a wrong kernel, and B comes to the CPU a block of columns at a time, so the check needs
no full-size copy of B on the host or the GPU.

Sizes that would not fit are refused before anything is allocated: the GPU's (A, B, C, CuPy's
fp32 staging for fp16, cuBLAS's workspace) and the host's for the CPU contenders.

Pure Python runs only up to n = 128 (it is measured at 64 and 128 even when not asked); larger
sizes show its time extrapolated from the measured rate, marked extrapolated, never dropped.

Timing regimes (each row says which in `extra.regime` and its note): a GPU product of 0.5 ms or
more is timed back to back after an untimed warm-up, like the calibration. A shorter one is
timed one call at a time, launch latency included (the lesson of small sizes), and then once
more back to back (`<contender> back-to-back` rows), the throughput the same product reaches
in a stream of work: the two differ by the launch cost, several times over at n=256.

A CPU contender skips a size only when it is estimated to take over CPU_RUN_LIMIT_S a call, an
estimate checked by a probe first (matmul_estimate.py).
"""

from __future__ import annotations

import secrets
from typing import Any

from gpulab.core import peaks as pk
from gpulab.core.params import Int, List, ParamSet
from gpulab.core.results import Result, Series
from gpulab.core.timing import sustained_kw
from gpulab.experiments import backends, ceilings, fits, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.matmul_contenders import (
    PYTHON_MAX,
    MatmulContenders,
)
from gpulab.experiments.matmul_estimate import CPU_RUN_LIMIT_S, estimate_s, probe
from gpulab.experiments.roofline import throughput_series
from gpulab.experiments.wording import (
    GPU_BACKENDS,
    backend,
    fastest,
    label,
    measured,
    of_peak,
    rate,
    times,
)

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
GPU_WORKSPACE = 256 * 2**20  # cuBLAS workspace and the allocators' rounding
SUPPORTED = {
    "python": ("fp64",),
    "numpy": ("fp64", "fp32"),
    "torch-cpu": ("fp64", "fp32", "bf16"),
    "torch": DTYPES,
    "cupy": ("fp64", "fp32", "fp16"),
}
PYTHON_MEASURED = (64, 128)


def benchmark_timer_tflops(
    n: int,
    dtype: str = "bf16",
    device: str = "cuda:0",
    *,
    min_run_time: float = 1.0,
    warm_s: float = 0.5,
) -> float:
    """torch.utils.benchmark.Timer on torch.mm of random n x n inputs: the bench's second opinion.

    The op first runs back to back for `warm_s` untimed, as gpulab's own sustained timing does,
    so both opinions see a GPU at the same settled clocks (an H100 at its power limit runs an
    8192 bf16 product about 10% slower than in its first fraction of a second).
    """
    import torch
    from torch.utils import benchmark

    tdt = backends.torch_dtype(dtype)
    a = torch.randn(n, n, device=device, dtype=tdt)
    b = torch.randn(n, n, device=device, dtype=tdt)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        with torch.cuda.device(torch.device(device)):
            if warm_s > 0:
                sustained_kw(lambda: torch.mm(a, b), torch.cuda.synchronize, warm_s)
            t = benchmark.Timer(stmt="torch.mm(a, b)", globals={"torch": torch, "a": a, "b": b})
            m = t.blocked_autorange(min_run_time=min_run_time)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return 2 * n**3 / m.median / 1e12


class Matmul(MatmulContenders, Experiment):
    """The `matmul` experiment: Square matrix products from pure Python to tensor cores: time,
    TFLOP/s, % of peak."""

    id = "matmul"
    title = "The matmul race"
    summary = "Square matrix products from pure Python to tensor cores: time, TFLOP/s, % of peak."
    lesson = "dtypes-and-tensor-cores"
    params = ParamSet(
        (
            List(
                "sizes", [256, 512, 1024, 2048, 4096, 8192], "int", "n for n x n", min=16, max=32768
            ),
            List("dtypes", ["fp32", "bf16"], "choice", "precisions", choices=DTYPES),
            List(
                "contenders",
                ["python", "numpy", "torch-cpu", "torch", "cupy"],
                "choice",
                "who races",
                choices=("python", "numpy", "torch-cpu", "torch", "cupy"),
            ),
            Int(
                "seed",
                0,
                "random seed of the inputs; 0 = a fresh one every run (recorded in the result)",
                min=0,
                max=2**31,
            ),
        )
    )
    contenders = (
        Contender(
            "python", "pure Python (lists)", "python", f"n <= {PYTHON_MAX}, then extrapolated"
        ),
        Contender("numpy", "NumPy (BLAS on the CPU)", "numpy"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
        Contender("torch", "PyTorch GPU (cuBLAS)", "torch-cuda"),
        Contender("cupy", "CuPy (cuBLAS)", "cupy"),
    )
    bench_params = (
        {
            "sizes": [256, 1024, 4096, 8192],
            "dtypes": ["fp32", "tf32", "fp16", "bf16"],
            "contenders": ["python", "numpy", "torch", "cupy"],
        },
    )
    bench_suites = ("core", "full")

    # ------------------------------------------------------------------ run

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        sizes = sorted(int(n) for n in params["sizes"])
        dtypes = list(params["dtypes"])
        result = self.new_result(ctx, params)
        seed = int(params.get("seed") or 0) or secrets.randbelow(2**31 - 1) + 1
        chosen = [c for c in self.contenders if c.id in params["contenders"]]
        todo = [c for c in chosen if c.id not in result.unavailable]
        gpu = [c for c in todo if c.backend in ("torch-cuda", "cupy")]
        skipped: list[str] = []
        plan = self._plan(todo, sizes, dtypes, skipped)
        self._check_host_fits(plan)
        if gpu:
            self._check_fits(ctx, sizes, dtypes, [c.id for c in gpu])
        peaks_gpu = pk.load_or_measure(ctx, quick=ctx.quick) if gpu else None
        peaks_cpu = pk.load_or_measure(ctx, quick=ctx.quick, cpu=True)
        here = ceilings.Ceilings(peaks_gpu or peaks_cpu, host=peaks_cpu)
        times: dict[tuple[str, str, int], float] = {}
        for step, (contender, dtype, n) in enumerate(plan):
            ctx.progress(step / max(1, len(plan)), f"{contender.label} {dtype} n={n}")
            step_seed = self.step_seed(seed, contender.id, dtype, n)
            extra_row = None
            if contender.id == "python":
                m, v = self._python(ctx, n, step_seed)
            else:
                est = estimate_s(contender.id, dtype, n, times)
                if contender.backend in ("numpy", "torch-cpu") and est > CPU_RUN_LIMIT_S:
                    est = probe(ctx, contender, dtype, n, times)
                if contender.backend in ("numpy", "torch-cpu") and est > CPU_RUN_LIMIT_S:
                    why = f"{contender.id} {dtype} n={n}: skipped, estimated {est:.0f} s a run"
                    skipped.append(why)
                    ctx.log(why)
                    continue
                # Torch's CPU rows get no % of peak: the host ceiling is NumPy's BLAS, not theirs.
                peak = ceilings.peak_here(here, contender.backend, f"matmul:{dtype}")
                m, v, extra_row = self._one(ctx, contender, dtype, n, peak, est, step_seed)
                if extra_row is not None:
                    extra_row.extra["seed"] = step_seed
            m.extra["seed"] = step_seed
            # The fastest run: a noisy median would inflate the next size's estimate.
            times[(contender.id, m.dtype, n)] = m.time_min_s
            ctx.measurement(m)
            result.measurements.append(m)
            if extra_row is not None:
                ctx.measurement(extra_row)
                result.measurements.append(extra_row)
            if v is not None:
                result.verdicts.append(v)
        if any(c.id == "python" for c in todo):
            self._extrapolate_python(ctx, result, sizes)
        self._speedups(result)
        throughput_series(result, "n")  # TFLOP/s per dtype against the calibrated ceiling
        result.summary = {
            "sizes": sizes,
            "dtypes": dtypes,
            "skipped": skipped,
            "flops": "2 n^3",
            "seed": seed,
        }
        best = max(
            (m for m in result.measurements if not m.extrapolated and m.throughput),
            key=lambda m: m.throughput or 0,
            default=None,
        )
        if best is not None:
            result.summary["fastest"] = f"{best.contender} {best.dtype} n={best.size}"
            result.summary["best_tflops"] = best.throughput
        result.explanation = (
            "A matrix product does 2n^3 flops on 3n^2 numbers, so large ones are compute-bound "
            "and show what each engine can do: pure Python pays an interpreter dispatch per "
            "multiply, NumPy calls an optimised BLAS on the CPU cores, and cuBLAS on the GPU "
            "runs thousands of threads, on tensor cores for tf32, fp16 and bf16. Small sizes "
            "are launch- and overhead-bound: the GPU's lead only appears as n grows. "
            "% of peak compares each row with this machine's own calibrated matmul for the "
            "dtype: cuBLAS via torch for the GPU rows, NumPy's BLAS for the NumPy rows; "
            "PyTorch's CPU rows have no calibrated ceiling of their own, so they show none. "
            "GPU products of 0.5 ms or more are timed back to back after a warm-up, as the "
            "calibration is; shorter ones one call at a time, launch latency included, and "
            "again back to back (the 'back-to-back' rows): the gap between the two is the "
            "cost of a launch, which batching work (or CUDA graphs) hides."
        )
        ctx.progress(1.0, "done")
        return self.finish(result)

    def _plan(self, todo, sizes, dtypes, skipped) -> list[tuple[Contender, str, int]]:
        plan: list[tuple[Contender, str, int]] = []
        for c in todo:
            if c.id == "python":
                for n in sorted(set(PYTHON_MEASURED) | {s for s in sizes if s <= PYTHON_MAX}):
                    plan.append((c, "fp64", n))
                continue
            for dtype in dtypes:
                if dtype not in SUPPORTED[c.id]:
                    skipped.append(f"{c.id} has no {dtype} matmul")
                    continue
                plan.extend((c, dtype, n) for n in sizes)
        return plan

    @staticmethod
    def step_seed(seed: int, contender: str, dtype: str, n: int) -> int:
        """The seed of one (contender, dtype, n) step, derived from the run's seed."""
        import numpy as np

        ids = ("python", "numpy", "torch-cpu", "torch", "cupy")
        key = [seed, ids.index(contender), DTYPES.index(dtype), n]
        return int(np.random.SeedSequence(key).generate_state(1)[0])

    @staticmethod
    def gpu_bytes(n: int, dtype: str, contender: str = "torch") -> int:
        """GPU memory of one step: A, B and C in the dtype (made directly in it), and for CuPy's
        fp16 the fp32 array each input is drawn in first (CuPy draws no fp16 normals; C later
        reuses the freed staging block); the check takes B a block of columns at a time
        (at most verification.CHUNK elements); plus cuBLAS's workspace and the allocators' rounding."""
        w = BYTES[dtype]
        per = 2 * w + 4 + w if (contender == "cupy" and dtype == "fp16") else 3 * w
        return int(per * n * n * 1.05) + verification.CHUNK * 8 + GPU_WORKSPACE

    @staticmethod
    def host_bytes(n: int, dtype: str, contender: str) -> int:
        """Host memory of one step: A, B and C for a CPU contender; for any, the check's rows
        of A and C and one block of B's columns in float64."""
        cpu = contender in ("numpy", "torch-cpu")
        return int((3 * BYTES[dtype] * n * n if cpu else 0) * 1.05) + fits.HOST_SLACK_BYTES

    def _check_host_fits(self, plan: list[tuple[Contender, str, int]]) -> None:
        steps = [(self.host_bytes(n, d, c.id), c.id, d, n) for c, d, n in plan]
        if steps:
            need, cid, dtype, n = max(steps)
            fits.require_host_fit(need, f"matmul {cid} {dtype} n={n}")

    @classmethod
    def _check_fits(
        cls,
        ctx: Context,
        sizes: list[int],
        dtypes: list[str],
        contenders: list[str] | tuple[str, ...] = ("torch",),
    ) -> None:
        """Refuse sizes that would not fit on the GPU, before anything is allocated."""
        n = max(sizes)
        steps = [
            (cls.gpu_bytes(n, d, c), c, d)
            for c in contenders
            for d in dtypes
            if d in SUPPORTED.get(c, ())
        ]
        if steps:
            need, cid, dtype = max(steps)
            fits.require_fit(ctx, need, f"matmul {cid} {dtype} n={n}")

    # ------------------------------------------------------------------ plot

    @staticmethod
    def _speedups(result: Result) -> None:
        base = {
            (m.dtype, m.size): m.time_median_s
            for m in result.measurements
            if m.contender == "numpy" and not m.extrapolated
        }
        base_any = {}
        for (dtype, size), t in base.items():
            if dtype == "fp32" or size not in base_any:
                base_any[size] = t
        lines: dict[str, tuple[list[float], list[float]]] = {}
        for m in result.measurements:
            if m.contender == "numpy" or m.size not in base_any or m.time_median_s <= 0:
                continue
            ref = base.get((m.dtype, m.size), base_any[m.size])
            xs, ys = lines.setdefault(f"{m.contender} {m.dtype}", ([], []))
            xs.append(float(m.size))
            ys.append(ref / m.time_median_s)
        for name, (xs, ys) in lines.items():
            pairs = sorted(zip(xs, ys, strict=True))
            result.series.append(
                Series(
                    name,
                    [p[0] for p in pairs],
                    [p[1] for p in pairs],
                    "n",
                    "speedup vs NumPy (same dtype, else fp32)",
                    log_x=True,
                    log_y=True,
                )
            )

    def headline(self, result: Result) -> str:
        """One line: at the largest size, the fastest contender's lead over NumPy (GPU) or pure
        Python, in the same dtype where one ran."""
        rows = measured(result)
        sizes = sorted({int(m.size) for m in rows}, reverse=True)
        for n in sizes:
            at = [m for m in rows if int(m.size) == n]
            best = fastest(at)
            if best is None:
                continue
            gpu = backend(self, best.contender) in GPU_BACKENDS
            base_id = "numpy" if gpu else "python"
            # Pure Python's extrapolated rows count as a baseline: that is what they are for.
            base = [
                m
                for m in result.measurements
                if m.contender == base_id and int(m.size) == n and m.time_median_s > 0
            ]
            if not base or best.contender == base_id:
                continue
            # Against the baseline's row in the same dtype where it ran one, else its fastest row:
            # an fp64 NumPy row must not inflate a bf16 GPU lead.
            same = [b for b in base if b.dtype == best.dtype]
            ref = min(same or base, key=lambda b: b.time_median_s)
            ratio = ref.time_median_s / best.time_median_s
            who = "the GPU" if gpu else label(self, best.contender)
            guess = " (extrapolated)" if ref.extrapolated else ""
            return (
                f"{who} was {times(ratio)} faster than {label(self, base_id)}{guess} at n={n} "
                f"({best.contender} {best.dtype}: {rate(best)}{of_peak(best, 'peak')})"
            )
        return ""


EXPERIMENT = Matmul()
