"""Check for tree-reduction: the sum of n float32 values, level by level, on any device.

The reference is NumPy's float64 sum. A float32 tree's rounding error grows like
eps * log2(n) * sum(|x|), so the tolerance is 4 eps (log2 n + 1) sum(|x|): loose enough for any
sensible float32 order of additions, tight enough that a dropped element or a float16 pass fails
at the edge sizes. The speed grade counts n * 4 bytes per call (each value read once) against
the device's copy bandwidth, beside torch.sum on the same tensors.

What the learner's code may dispatch is an allowlist (ALLOW, gpulab.exercises.refuse): the
operators a tree of pairwise adds is made of (slices and views, add, cat or a pad for an odd
level, allocation, copies, the final number read out), and nothing else: a sum, a mean, a
cumsum, a matmul or dot with ones, a norm, x.numpy() and any reduction not on a list the check
keeps are all refused, whatever wrapper they come through. Every call into the learner's code
runs under that watch, the timed ones too.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from gpulab.exercises import api, refuse
from gpulab.exercises.fresh import Refresher

ENTRY = "tree_sum"
EPS32 = 2.0**-24
_urandom = os.urandom  # bound before the learner's file is imported
# A tree of pairwise adds, and what it takes to build one: allocation and views, the adds, cat
# or a pad for a level of odd length, copies and dtype changes, the final value read out
ALLOW = refuse.Allow(
    refuse.ALLOCATION_AND_VIEWS
    | frozenset(
        "aten." + op
        for op in (
            "add",
            "add_",
            "cat",
            "stack",
            "constant_pad_nd",
            "pad",
            "copy_",
            "clone",
            "_to_copy",
            "index",
            "index_select",
            "_local_scalar_dense",
        )
    ),
    "a tree of pairwise adds: write the levels yourself",
)


def _values(rng: np.random.Generator, n: int) -> np.ndarray:
    # Magnitudes 0.5 to 100 with both signs, one value in 64 scaled to ~1e4; never zero.
    x = rng.random(n, dtype=np.float32) * np.float32(99.5) + np.float32(0.5)
    x *= (rng.integers(0, 2, n, dtype=np.int8) * 2 - 1).astype(np.float32)
    x[rng.random(n, dtype=np.float32) < 1 / 64] *= np.float32(100.0)
    return x


def cases(ctx: api.Context) -> list[api.Case]:
    sizes = [*api.EDGE_SIZES, 4096 * 3 + 7, ctx.big(4, cap=100_000_000)]
    out = []
    for n in sizes:
        label = f"n={n}"
        if n == sizes[-1]:
            label += " (large)"
        elif n % 2 and n > 1:
            label += " (odd: one value has no partner at the first level)"
        out.append(api.Case(label, {"x": _values(ctx.rng, n)}))
    return out


def expected(case: api.Case, ctx: api.Context) -> dict[str, float]:
    x = case.args["x"]
    return {
        "sum": float(np.sum(x, dtype=np.float64)),
        "abs": float(np.abs(x, dtype=np.float64).sum()),
    }


def run(fn: Any, case: api.Case, ctx: api.Context) -> float:
    import torch

    host = case.args["x"]
    x = torch.from_numpy(host.copy()).to(ctx.device)
    got = refuse.call(ALLOW, fn, x)  # RefusedCall is a CheckError: its one line is the verdict
    if isinstance(got, torch.Tensor) and got.numel() != 1:
        raise api.CheckError(
            f"tree_sum returned a tensor of shape {tuple(got.shape)}, expected one number"
        )
    value = _number(got)
    if value is None:
        raise api.CheckError(
            f"tree_sum returned {type(got).__name__}, expected a tensor or a plain float"
        )
    if not torch.equal(x.cpu(), torch.from_numpy(host)):
        raise api.CheckError(
            "tree_sum changed its input tensor (work on new tensors, not in place)"
        )
    return value


# Plain types only: a subclass of float (or of Tensor) could do its sum in __float__, after the
# refusals are off, when the grader reads the number
_PLAIN = (int, float, np.float16, np.float32, np.float64)


def _number(got: Any) -> float | None:
    """The one number tree_sum returned, read only from a plain tensor or number; else None."""
    import torch

    if type(got) is torch.Tensor and got.numel() == 1:
        return float(got.detach().reshape(()).to("cpu", torch.float64).item())
    if type(got) in _PLAIN:
        return float(got)
    return None


def compare(want: dict, got: float, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    n = case.args["x"].size
    allowed = 4 * EPS32 * (math.log2(max(n, 2)) + 1) * want["abs"]
    err = abs(got - want["sum"])
    if err <= allowed:  # NaN fails here
        return None
    return api.Mismatch(
        f"sum = {got!r}, expected {want['sum']!r}: off by {err:.4g}, allowed {allowed:.3g}",
        expected=want["sum"],
        got=got,
        max_error=err,
    )


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import torch

    n = ctx.big(4, cap=100_000_000)
    gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)

    def setup(i: int) -> Any:
        # uniform_ in place: one pass, no temporaries (a third of the time on a CPU)
        return torch.empty(n, device=ctx.device).uniform_(-100.0, 100.0, generator=gen)

    refresh = Refresher()

    def prepare(x: Any) -> None:
        # Every element rewritten before each timed call (gpulab.exercises.fresh), each by its
        # own factor: no sum kept from an earlier call, whole or by parts, can be updated. But
        # those factors move a sum by about sqrt(n) elements' worth, and the tolerance is the
        # rounding bound for n values: at tens of millions a kept sum could fall inside it. So
        # every element also moves by one shift a call, 1 to 2 either way (the values stay
        # near their range), and the sum by n times that: far outside any rounding.
        refresh(x)
        raw = int.from_bytes(_urandom(2), "little")
        x.add_((1.0 + (raw >> 1) / 32768.0) * (1 if raw & 1 else -1))

    def check_call(x: Any, returned: Any) -> str | None:
        # The exact sum of what this call was given, in float64, read after the call (its
        # inputs are checked unchanged): nothing kept between calls on the check's side either
        total = float(x.sum(dtype=torch.float64))
        size = float(x.abs().sum(dtype=torch.float64))
        got = _number(returned)
        if got is None:
            return f"tree_sum returned {type(returned).__name__}, expected one number"
        allowed = 4 * EPS32 * (math.log2(n) + 1) * size
        if abs(got - total) <= allowed:  # NaN fails here
            return None
        return f"sum = {got!r}, expected {total!r} (off by {abs(got - total):.4g})"

    return api.TimingSpec(
        setup=setup,
        learner=fn,
        library=torch.sum,
        library_name="torch.sum",
        work=n * 4.0,
        metric="GB/s",
        ceiling="copy",
        sync="torch" if ctx.gpu else "none",
        note=f"n = {n:,} float32 values: n x 4 bytes, each value read once",
        prepare=prepare,
        check_call=check_call,
        inputs=lambda x: [x],  # check_call sums x after the call: a zeroed x sums to 0
    )
