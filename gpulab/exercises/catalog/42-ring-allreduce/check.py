"""Check for ring-allreduce: the learner's in-place all-reduce from point-to-point messages.

Each case runs `ring_all_reduce(t)` on 2, 3 and 4 ranks (NCCL where every rank has a GPU, gloo on
the CPU elsewhere: gpulab.exercises.collective_checks), on sizes that do not split evenly among
the ranks (1, 2, 31, 33, 1025 values) and a large one; every rank's t must hold the float64 sum
of all ranks' inputs, computed before the learner's file was loaded. Inside the call
torch.distributed's collectives are refused and every isend / irecv request must be waited on.

Timed (gpulab.exercises.speed) on every GPU here up to 4 (2 gloo ranks on the CPU without 2 GPUs),
through a pool of ranks that stays up for the timing: yours, our expert ring and the library's
all_reduce take turns; the figure is busbw, the grade a fraction of our expert's.
"""

from __future__ import annotations

from typing import Any

from gpulab.exercises import api
from gpulab.exercises import collective_checks as cc

ENTRY = "ring_all_reduce"
# Its check starts processes of its own: nothing compiled in the worker ahead would be reused
PREPARE = False
TIMED = cc.Timed(
    __file__,
    ENTRY,
    "torch.distributed.all_reduce",
    "an all-reduce",
    least=cc.all_reduce_least,
    ceiling="link",
)


def cases(ctx: api.Context) -> list[api.Case]:
    return [cc.case(ctx, w, cc.sizes(ctx, w)) for w in cc.WORLDS]


def expected(case: api.Case, ctx: api.Context) -> list[Any]:
    return cc.sums(case)


def before_load(rc: Any) -> None:
    cc.before_load(rc)


def rank(rc: Any, fn: Any, case: api.Case) -> dict[str, list[Any]]:
    """One rank: the learner's call on this rank's row of every size, in place, and the bytes
    each call sent through torch.distributed."""
    import torch

    out, sent = [], []
    for x in cc.inputs(case, rc.rank):
        t = torch.from_numpy(x).to(rc.device)
        cc.call(fn, t)  # the tensor the check holds: a result written elsewhere is not in it
        sent.append(cc.sent())
        cc.sync(rc.device)
        out.append(t.cpu().numpy())
    return {"out": out, "sent": sent}


def run(fn: Any, case: api.Case, ctx: api.Context) -> list[Any]:
    a = case.args
    return cc.launch(__file__, fn, ENTRY, case, a["world"], a["backend"])


def compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    bad = cc.compare_ranks(want, [g["out"] for g in got], case, what="t")
    if bad is not None:
        return bad
    world = case.args["world"]
    for k, n in enumerate(case.args["sizes"]):
        total = sum(g["sent"][k] for g in got)
        why = cc.too_little(total, 4 * cc.all_reduce_least(n, world), f"{n:,} values", world)
        if why:
            return api.Mismatch(f"{n:,} values each: {why}")
    return None


def pool_start(rc: Any, functions: list[Any]) -> Any:
    return cc.PoolState(rc, functions, cc.AllReduce)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    return cc.spec(fn, ctx, TIMED)
