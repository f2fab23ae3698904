"""The matmul race's contenders: how each one makes its inputs, runs C = A @ B, is timed and
checked (pure Python, NumPy, torch on the CPU or the GPU, CuPy), and pure Python's
extrapolated rows.

`Matmul` (matmul.py) inherits these methods: the run plans the steps and judges them, this
module holds what a single step does. Inputs are made directly in their dtype from the step's
seed, before the timed region; each row is checked on REF_ROWS rows against float64.
"""

from __future__ import annotations

import operator
from typing import Any

from gpulab.core.results import Measurement, Result, Verdict
from gpulab.core.timing import sustained_kw
from gpulab.experiments import backends, verification
from gpulab.experiments.backends import regime
from gpulab.experiments.base import Contender, Context
from gpulab.experiments.result_rows import row

# Relative Frobenius error allowed against float64, set from the errors measured
# on an H100 (see verification.TOLERANCE): fp32 1e-5, tf32 1e-3, fp16 1e-3, bf16 1e-2.
TOLERANCE = verification.TOLERANCE
PYTHON_MAX = 128
REF_ROWS = 64
SINGLE_NOTE = "one call at a time: launch latency included"


def python_matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """The product of two list-of-lists matrices in pure Python."""
    cols = list(zip(*b, strict=True))
    return [[sum(map(operator.mul, r, c)) for c in cols] for r in a]


def rel_error(out, ref) -> float:
    """The largest error of `out` against `ref`, relative to ref's largest magnitude (inf when
    not finite)."""
    import numpy as np

    out = np.asarray(out, dtype=np.float64)
    if not np.isfinite(out).all():
        return float("inf")
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


class MatmulContenders:
    """One step of the race per contender; mixed into `Matmul`."""

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
        return timing, verification.product_error(out[:k], a[:k], b), k, kw, None

    def _torch(self, ctx: Context, c: Contender, dtype: str, n: int, est: float, seed: int):
        import torch

        dev = torch.device(ctx.torch_device if c.backend == "torch-cuda" else "cpu")
        tdt = backends.torch_dtype(dtype)
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
                kw = sustained_kw(call, torch.cuda.synchronize, 0.1 if ctx.quick else 0.5) or kw
            timing = ctx.timer.measure(call, sync="torch" if cuda else "none", **kw)
            if cuda and not kw.get("inner"):
                b2b = self._back_to_back(ctx, call, torch.cuda.synchronize, "torch")
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
        k = min(n, REF_ROWS)
        # Rows of C and A, and B a block of columns at a time, widened to float64 on the host
        # (bf16 and fp16 exactly): no full-size temporary of B on the GPU or the host.
        err = verification.product_error(out[:k], a[:k], b)
        # Freed before the cache is emptied. Not `del`: `call` closes over these cells, and a
        # Tensor-typed cell that ends as None is what mypy cannot follow.
        a = b = out = None  # type: ignore[assignment]  # freed: see above
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

            sync = cp.cuda.Device().synchronize
            kw = sustained_kw(call, sync, 0.1 if ctx.quick else 0.5) or self._timer_kw(est)
            timing = ctx.timer.measure(call, sync="cupy", **kw)
            b2b = None
            if not kw.get("inner"):
                b2b = self._back_to_back(ctx, call, sync, "cupy")
            k = min(n, REF_ROWS)
            err = verification.product_error(out[:k], a[:k], b)
            a = b = out = None  # freed before the pool's blocks are released
            cp.get_default_memory_pool().free_all_blocks()
        return timing, err, k, kw, b2b

    @staticmethod
    def _back_to_back(ctx: Context, call: Any, sync: Any, kind: str) -> tuple[Any, dict]:
        """The same short product timed back to back (the throughput regime): `inner` calls
        between one pair of events, after the warm-up `sustained_kw` already ran."""
        kw = sustained_kw(call, sync, 0.02 if ctx.quick else 0.05, min_call_s=0.0)
        return ctx.timer.measure(call, sync=kind, **kw), kw
