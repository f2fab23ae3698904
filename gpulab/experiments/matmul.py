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

import operator
import secrets
from typing import Any

from gpulab.core.params import Int, List, ParamSet
from gpulab.core.results import Measurement, Result, Series, Verdict
from gpulab.experiments import syllabus_support as sup
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.common import row
from gpulab.experiments.matmul_estimate import CPU_RUN_LIMIT_S, estimate_s, probe
from gpulab.experiments.roofline import throughput_series
from gpulab.experiments.syllabus_support import regime

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
# Relative Frobenius error allowed against float64 (METHOD.md), set from the errors measured
# on an H100 (see syllabus_support.TOLERANCE): fp32 1e-5, tf32 1e-3, fp16 1e-3, bf16 1e-2.
TOLERANCE = sup.TOLERANCE
GPU_WORKSPACE = 256 * 2**20  # cuBLAS workspace and the allocators' rounding
SUPPORTED = {
    "python": ("fp64",),
    "numpy": ("fp64", "fp32"),
    "torch-cpu": ("fp64", "fp32", "bf16"),
    "torch": DTYPES,
    "cupy": ("fp64", "fp32", "fp16"),
}
PYTHON_MAX = 128
PYTHON_MEASURED = (64, 128)
REF_ROWS = 64
SINGLE_NOTE = "one call at a time: launch latency included"


def python_matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    cols = list(zip(*b, strict=True))
    return [[sum(map(operator.mul, r, c)) for c in cols] for r in a]


def rel_error(out, ref) -> float:
    import numpy as np

    out = np.asarray(out, dtype=np.float64)
    if not np.isfinite(out).all():
        return float("inf")
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


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

    from gpulab.core.peaks import sustained_kw

    tdt = _torch_dtype(dtype)
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


def _torch_dtype(dtype: str):
    import torch

    return {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
    }[dtype]


class Matmul(Experiment):
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
        from gpulab.core import peaks as pk

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
        ceilings = sup.Ceilings(peaks_gpu or peaks_cpu, host=peaks_cpu)
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
                peak = sup.peak_here(ceilings, contender.backend, f"matmul:{dtype}")
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
        (at most sup.CHUNK elements); plus cuBLAS's workspace and the allocators' rounding."""
        w = BYTES[dtype]
        per = 2 * w + 4 + w if (contender == "cupy" and dtype == "fp16") else 3 * w
        return int(per * n * n * 1.05) + sup.CHUNK * 8 + GPU_WORKSPACE

    @staticmethod
    def host_bytes(n: int, dtype: str, contender: str) -> int:
        """Host memory of one step: A, B and C for a CPU contender; for any, the check's rows
        of A and C and one block of B's columns in float64."""
        cpu = contender in ("numpy", "torch-cpu")
        return int((3 * BYTES[dtype] * n * n if cpu else 0) * 1.05) + sup.HOST_SLACK_BYTES

    def _check_host_fits(self, plan: list[tuple[Contender, str, int]]) -> None:
        steps = [(self.host_bytes(n, d, c.id), c.id, d, n) for c, d, n in plan]
        if steps:
            need, cid, dtype, n = max(steps)
            sup.require_host_fit(need, f"matmul {cid} {dtype} n={n}")

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
            sup.require_fit(ctx, need, f"matmul {cid} {dtype} n={n}")

    # ------------------------------------------------------------------ contenders

    def _python(self, ctx: Context, n: int, seed: int) -> tuple[Measurement, Verdict]:
        import numpy as np

        rng = np.random.default_rng(seed)
        a_np, b_np = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        a, b = a_np.tolist(), b_np.tolist()
        out: dict[str, Any] = {}

        def call() -> None:
            out["c"] = python_matmul(a, b)

        timing = ctx.timer.measure(call, min_runs=1, warmup=0 if n > 64 else 1, cold=False)
        err = rel_error(out["c"], a_np @ b_np)
        m = row("python", str(n), timing, work=2 * n**3, unit="TFLOP/s", scale=1e12, dtype="fp64")
        m.note = "Python floats (fp64)"
        v = Verdict.check(
            "python",
            err,
            TOLERANCE["fp64"],
            metric="rel. Frobenius error",
            size=str(n),
            dtype="fp64",
        )
        return m, v

    def _extrapolate_python(self, ctx: Context, result: Result, sizes: list[int]) -> None:
        measured = [
            m for m in result.measurements if m.contender == "python" and not m.extrapolated
        ]
        if not measured:
            return
        ref = max(measured, key=lambda m: int(m.size))
        rate = 2 * int(ref.size) ** 3 / ref.time_median_s
        for n in sizes:
            if n <= PYTHON_MAX:
                continue
            t = 2 * n**3 / rate
            m = Measurement(
                contender="python",
                size=str(n),
                dtype="fp64",
                time_median_s=t,
                time_min_s=t,
                time_max_s=t,
                runs=0,
                throughput=rate / 1e12,
                unit="TFLOP/s",
                extrapolated=True,
                note=f"extrapolated from n={ref.size} ({rate / 1e9:.3g} GFLOP/s)",
            )
            ctx.measurement(m)
            result.measurements.append(m)

    def _one(
        self,
        ctx: Context,
        c: Contender,
        dtype: str,
        n: int,
        peak: float | None,
        est: float,
        seed: int,
    ) -> tuple[Measurement, Verdict, Measurement | None]:
        runner = {
            "numpy": self._numpy,
            "torch-cpu": self._torch,
            "torch": self._torch,
            "cupy": self._cupy,
        }
        timing, err, k, kw, b2b = runner[c.id](ctx, c, dtype, n, est, seed)
        gpu = c.backend in ("torch-cuda", "cupy")

        def make(cid: str, t: Any, how: dict[str, Any], note: str) -> Measurement:
            return row(
                cid,
                str(n),
                t,
                work=2 * n**3,
                unit="TFLOP/s",
                scale=1e12,
                dtype=dtype,
                peak=peak,
                peak_name=f"calibrated matmul {dtype}" if peak else "",
                rel_error=err,
                rows_checked=k,
                regime=regime(how),
                note=note,
            )

        m = make(c.id, timing, kw, SINGLE_NOTE if gpu and not kw.get("inner") else "")
        extra_row = None
        if b2b is not None:
            t2, kw2 = b2b
            extra_row = make(
                f"{c.id} back-to-back",
                t2,
                kw2,
                f"back to back, {kw2.get('inner', 1)} calls per sample: launch latency hidden",
            )
        v = Verdict.check(
            c.id,
            err,
            TOLERANCE[dtype],
            metric="rel. Frobenius error",
            reference=f"float64, {k} of {n} rows",
            size=str(n),
            dtype=dtype,
        )
        return m, v, extra_row

    @staticmethod
    def _timer_kw(est: float) -> dict[str, Any]:
        return {"min_runs": 1, "warmup": 1} if est > 0.5 else {}

    def _numpy(self, ctx: Context, c: Contender, dtype: str, n: int, est: float, seed: int):
        import numpy as np

        npd = np.float64 if dtype == "fp64" else np.float32
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((n, n), dtype=npd)
        b = rng.standard_normal((n, n), dtype=npd)
        out = np.full((n, n), np.nan, dtype=npd)
        kw = self._timer_kw(est)
        timing = ctx.timer.measure(lambda: np.matmul(a, b, out=out), **kw)
        k = min(n, REF_ROWS)
        return timing, sup.product_error(out[:k], a[:k], b), k, kw, None

    def _torch(self, ctx: Context, c: Contender, dtype: str, n: int, est: float, seed: int):
        import torch

        dev = torch.device(ctx.torch_device if c.backend == "torch-cuda" else "cpu")
        tdt = _torch_dtype(dtype)
        gen = torch.Generator(device=dev)
        gen.manual_seed(seed)
        a = torch.randn(n, n, device=dev, dtype=tdt, generator=gen)
        b = torch.randn(n, n, device=dev, dtype=tdt, generator=gen)
        out = torch.full((n, n), float("nan"), device=dev, dtype=tdt)
        cuda = dev.type == "cuda"
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        try:

            def call() -> None:
                torch.mm(a, b, out=out)

            kw = self._timer_kw(est)
            b2b = None
            if cuda:
                from gpulab.core.peaks import sustained_kw

                kw = sustained_kw(call, torch.cuda.synchronize, 0.1 if ctx.quick else 0.5) or kw
            timing = ctx.timer.measure(call, sync="torch" if cuda else "none", **kw)
            if cuda and not kw.get("inner"):
                b2b = self._back_to_back(ctx, call, torch.cuda.synchronize, "torch")
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
        k = min(n, REF_ROWS)
        # Rows of C and A, and B a block of columns at a time, widened to float64 on the host
        # (bf16 and fp16 exactly): no full-size temporary of B on the GPU or the host.
        err = sup.product_error(out[:k], a[:k], b)
        a = b = out = None  # freed before the cache is emptied
        if cuda:
            torch.cuda.empty_cache()
        return timing, err, k, kw, b2b

    def _cupy(self, ctx: Context, c: Contender, dtype: str, n: int, est: float, seed: int):
        import cupy as cp

        cpd = {"fp64": cp.float64, "fp32": cp.float32, "fp16": cp.float16}[dtype]
        draw = cp.float64 if dtype == "fp64" else cp.float32  # CuPy draws no fp16 normals
        with cp.cuda.Device(ctx.device_index):
            rs = cp.random.RandomState(seed)
            a = rs.standard_normal((n, n), dtype=draw).astype(cpd, copy=False)
            b = rs.standard_normal((n, n), dtype=draw).astype(cpd, copy=False)
            out = cp.full((n, n), cp.nan, dtype=cpd)

            def call() -> None:
                cp.matmul(a, b, out=out)

            from gpulab.core.peaks import sustained_kw

            sync = cp.cuda.Device().synchronize
            kw = sustained_kw(call, sync, 0.1 if ctx.quick else 0.5) or self._timer_kw(est)
            timing = ctx.timer.measure(call, sync="cupy", **kw)
            b2b = None
            if not kw.get("inner"):
                b2b = self._back_to_back(ctx, call, sync, "cupy")
            k = min(n, REF_ROWS)
            err = sup.product_error(out[:k], a[:k], b)
            a = b = out = None  # freed before the pool's blocks are released
            cp.get_default_memory_pool().free_all_blocks()
        return timing, err, k, kw, b2b

    @staticmethod
    def _back_to_back(ctx: Context, call: Any, sync: Any, kind: str) -> tuple[Any, dict]:
        """The same short product timed back to back (the throughput regime): `inner` calls
        between one pair of events, after the warm-up `sustained_kw` already ran."""
        from gpulab.core.peaks import sustained_kw

        kw = sustained_kw(call, sync, 0.02 if ctx.quick else 0.05, min_call_s=0.0)
        return ctx.timer.measure(call, sync=kind, **kw), kw

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


EXPERIMENT = Matmul()
