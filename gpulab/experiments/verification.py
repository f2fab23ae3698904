"""Checking a contender's output against a reference: tolerances by dtype, relative errors,
products checked a block of columns at a time, exact mismatches, and the verdicts built on them.

Every check works a block (CHUNK elements) at a time and brings a GPU result to the host one
block at a time, so checking a large result never needs a float64 copy of it on either side.
Nothing here imports torch or CuPy at module level.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.results import Verdict
from gpulab.experiments.base import Context
from gpulab.experiments.blocks import SMALL_BLOCK, on_host

# Relative-error thresholds, by dtype, set from the errors measured on an H100
# (bench/results/full-h100.json, relative Frobenius norm of matmuls vs float64): fp32 up to
# 1.6e-6 at n=8192; tf32 2.9e-4; fp16 2.1e-4 (2.5e-4 at odd sizes); bf16 1.7e-3 (2.4e-3 at odd
# sizes). Each bound leaves a factor of 3 to 6 over the worst measured error.
TOLERANCE = {
    "fp64": 1e-12,
    "fp32": 1e-5,
    "tf32": 1e-3,
    "fp16": 1e-3,
    "bf16": 1e-2,
}

# Verification works a block at a time (rel_error, product_error, mismatches), so checking a
# large result costs a few blocks of this many elements on the host and the device, never a
# float64 copy of the whole result.
CHUNK = 1 << 22


def poison(out: Any, ctx: Context | None = None) -> None:
    """Fill an output with NaN so an element the contender never writes fails the check.
    With `ctx`, a CPU output is filled a block at a time (a cancel is taken between blocks)."""
    if ctx is not None and on_host(out) and len(_shape(out)) == 1:
        for s in ctx.blocks(_shape(out)[0], SMALL_BLOCK):  # often the first write: page faults
            poison(out[s])
    elif hasattr(out, "fill_"):
        out.fill_(float("nan"))
    else:
        out.fill(float("nan"))


def _shape(x: Any) -> tuple[int, ...]:
    """x's shape for NumPy, torch and CuPy arrays (and anything NumPy can take)."""
    if hasattr(x, "shape"):
        return tuple(int(d) for d in x.shape)
    import numpy as np

    return tuple(np.shape(x))


def rel_error(out: Any, ref: Any, ctx: Context | None = None) -> float:
    """||out - ref|| / ||ref|| in float64 on the CPU; NaN anywhere gives inf (never passes).

    Works a block of rows (CHUNK elements) at a time: a GPU result is brought to the host one
    block at a time, so checking it needs no float64 copy of it on either side. `ref` is an
    array (NumPy, torch, CuPy) of out's shape, or a function of a row slice that returns that
    block of the reference (so a large reference is never materialised either).
    """
    import numpy as np

    if not hasattr(out, "shape"):
        out = np.asarray(out)
    if not callable(ref) and not hasattr(ref, "shape"):
        ref = np.asarray(ref)
    shape = _shape(out)
    if not callable(ref) and _shape(ref) != shape:
        return math.inf
    if len(shape) == 0:
        o = to_numpy64(out).reshape(1)
        r = to_numpy64(ref(slice(None)) if callable(ref) else ref).reshape(1)
        blocks = [(o, r)]
    else:
        rows = shape[0]
        per_row = max(1, math.prod(shape[1:]))
        step = max(1, CHUNK // per_row)

        def gen() -> Any:
            for i in range(0, rows, step):
                sl = slice(i, min(rows, i + step))
                yield to_numpy64(out[sl]), to_numpy64(ref(sl) if callable(ref) else ref[sl])

        blocks = gen()
    num = den = 0.0
    for o, r in blocks:
        if ctx is not None:
            ctx.check_cancelled()
        if o.shape != r.shape or not np.all(np.isfinite(o)):
            return math.inf
        d = (o - r).ravel()
        rr = r.ravel()
        num += float(d @ d)
        den += float(rr @ rr)
    if den == 0.0:
        return math.sqrt(num)
    return math.sqrt(num) / math.sqrt(den)


def product_error(out_rows: Any, a_rows: Any, b: Any, ctx: Context | None = None) -> float:
    """rel_error of `out_rows` against a_rows @ b, the product in float64 on the CPU.

    b (NumPy, torch on any device, or CuPy) is brought over a block of columns at a time, so
    the check never makes a float64 (or any) copy of the whole of b: on the GPU its temporaries
    are one block of columns (at most CHUNK elements), never an n x n matrix.
    """
    import numpy as np

    a = to_numpy64(a_rows)
    o = to_numpy64(out_rows)
    rows, inner = _shape(b)
    if o.shape != (a.shape[0], inner) or a.shape[1] != rows or not np.all(np.isfinite(o)):
        return math.inf
    step = max(1, CHUNK // max(1, rows))
    num = den = 0.0
    for j in range(0, inner, step):
        if ctx is not None:
            ctx.check_cancelled()
        r = a @ to_numpy64(b[:, j : j + step])
        d = o[:, j : j + step] - r
        num += float(np.sum(d * d))
        den += float(np.sum(r * r))
    if den == 0.0:
        return math.sqrt(num)
    return math.sqrt(num) / math.sqrt(den)


def mismatches(out: Any, ref: Any, ctx: Context | None = None) -> int:
    """Elements of `out` (any backend) that differ from the NumPy array `ref`, a block at a
    time (a GPU result comes to the host one block at a time); NaN counts as a mismatch."""
    import numpy as np

    flat_ref = ref.reshape(-1)
    n = flat_ref.size
    flat = out.reshape(-1)
    if int(math.prod(_shape(out))) != n:
        return n
    bad = 0
    for i in range(0, n, CHUNK):
        if ctx is not None:
            ctx.check_cancelled()
        got = to_numpy(flat[i : i + CHUNK])
        bad += int(np.count_nonzero(got != flat_ref[i : i + CHUNK]))
    return bad


def to_numpy(x: Any) -> Any:
    """A NumPy array of x on the host, in x's own dtype (no copy for NumPy and CPU torch)."""
    import numpy as np

    if hasattr(x, "detach"):  # torch
        return x.detach().to("cpu").numpy()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def to_numpy64(x: Any) -> Any:
    """A float64 NumPy copy of a NumPy, torch or CuPy array."""
    import numpy as np

    if hasattr(x, "detach"):  # torch
        return x.detach().to("cpu").double().numpy()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return np.asarray(x.get(), dtype=np.float64)
    return np.asarray(x, dtype=np.float64)


def verdict(contender: str, out: Any, ref: Any, dtype: str = "fp32", **kw: Any) -> Verdict:
    """A Verdict on `out` against `ref` with the dtype's tolerance (or `tolerance`)."""
    tol = kw.pop("tolerance", TOLERANCE.get(dtype, 1e-5))
    ctx = kw.pop("ctx", None)
    return Verdict.check(
        contender,
        rel_error(out, ref, ctx),
        tol,
        metric=kw.pop("metric", "relative error ||out - ref|| / ||ref||"),
        reference=kw.pop("reference", "float64 on the CPU"),
        dtype=dtype,
        **kw,
    )


def matmul_verdict(
    contender: str, out_rows: Any, a_rows: Any, b: Any, dtype: str, **kw: Any
) -> Verdict:
    """The verdict on rows of a product against float64 (`product_error`)."""
    k, n = _shape(out_rows)[0], _shape(b)[0]
    ctx = kw.pop("ctx", None)
    return Verdict.check(
        contender,
        product_error(out_rows, a_rows, b, ctx),
        kw.pop("tolerance", TOLERANCE.get(dtype, 1e-5)),
        metric="relative error ||out - ref|| / ||ref||",
        reference=f"float64 on the CPU, {k} of {n} rows",
        dtype=dtype,
        **kw,
    )
