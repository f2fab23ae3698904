"""Check of exercise 1 (vector-add): exact float32 sums, poisoned outputs, untouched inputs."""

import numpy as np

from gpulab.exercises.api import EDGE_SIZES, Case, CheckError, TimingSpec, compare_arrays
from gpulab.exercises.fresh import Refresher

ENTRY = "vector_add"


def _pair(rng, n):
    # Negative and positive, tiny to huge (2^-10 .. 2^100), never zero. a[i] and b[i] share a
    # magnitude, so a[i] + b[i] differs from both: returning either input cannot pass.
    # Drawn in float32 throughout: the case that fills the device must not take seconds.
    f32 = np.float32
    magnitude = np.exp2(rng.random(n, dtype=f32) * f32(110) - f32(10))
    pair = []
    for _ in range(2):
        sign = rng.integers(0, 2, n, dtype=np.int8).astype(f32) * f32(2) - f32(1)
        pair.append(sign * (rng.random(n, dtype=f32) * f32(1.5) + f32(0.5)) * magnitude)
    return {"a": pair[0], "b": pair[1]}


def cases(ctx):
    sizes = [*EDGE_SIZES, ctx.big(4, arrays=3)]
    out = []
    for n in sizes:
        note = " (fills the device)" if n == sizes[-1] else ""
        out.append(Case(f"n={n}{note}", _pair(ctx.rng, n)))
    return out


def expected(case, ctx):
    # The float64 sum of two float32 values, rounded once to float32, is exactly the float32 sum
    # (53 >= 2 * 24 + 2 bits: no double-rounding error), so this is the exact reference.
    a, b = case.args["a"], case.args["b"]
    return (a.astype(np.float64) + b.astype(np.float64)).astype(np.float32)


def run(fn, case, ctx):
    import torch

    a = torch.from_numpy(case.args["a"]).to(ctx.device)
    b = torch.from_numpy(case.args["b"]).to(ctx.device)
    keep_a, keep_b = a.clone(), b.clone()
    out = torch.full_like(a, float("nan"))
    storage = out.untyped_storage().data_ptr()  # the caller's buffer
    returned = fn(a, b, out)
    if out.untyped_storage().data_ptr() != storage:
        raise CheckError(
            "vector_add pointed `out` at new memory (out.set_ or out.data = ...): the caller's "
            "buffer was never written; write the sum into it (torch.add(a, b, out=out))"
        )
    if isinstance(returned, torch.Tensor) and returned is not out and bool(out.isnan().all()):
        raise CheckError(
            "vector_add returned a new tensor and left `out` unwritten: write the sum into out"
        )
    for name, now, before in (("a", a, keep_a), ("b", b, keep_b)):
        if not torch.equal(now, before):
            wrong = int((now != before).sum())
            raise CheckError(
                f"vector_add changed its input {name} ({wrong} elements): leave it as it is"
            )
    return out.cpu().numpy()


def compare(want, got, case, ctx):
    # Bit for bit: one IEEE float32 addition rounds the same on every device.
    return compare_arrays(want, got, dtype=np.float32, rtol=0.0, atol=0.0)


def timing(fn, ctx):
    import torch

    n = ctx.big(4, arrays=3)

    def setup(i):
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed + i)
        # uniform_ in place: one pass over each array, no temporaries (0.2 s less on a CPU)
        a = torch.empty(n, device=ctx.device).uniform_(0.5, 1.5, generator=g)
        b = torch.empty(n, device=ctx.device).uniform_(0.5, 1.5, generator=g)
        return a, b, torch.empty_like(a)

    refresh = Refresher()

    def prepare(inputs):
        # Every timed call starts from a poisoned out and inputs rewritten whole: a call that
        # skips work, or hands back an answer (or part of one) it kept, leaves out wrong
        a, b, out = inputs
        out.fill_(float("nan"))
        refresh(a, b)

    def check_call(inputs, returned):
        a, b, out = inputs
        if torch.equal(out, a + b):
            return None
        wrong = int((out != a + b).sum())
        return f"out does not hold a + b ({wrong} of {n:,} elements wrong)"

    return TimingSpec(
        setup=setup,
        learner=lambda s: fn(*s),
        library=lambda s: torch.add(s[0], s[1], out=s[2]),
        library_name="torch.add",
        work=3 * 4 * n,
        metric="GB/s",
        ceiling="copy",
        sync="torch" if ctx.gpu else "none",
        note=f"n={n:,} float32: 2 vectors read + 1 written",
        prepare=prepare,
        check_call=check_call,
    )
