"""Check for reduce-scatter-all-gather: the two halves of a ring all-reduce, each on its own.

Each case runs the learner's `reduce_scatter(out, x)` and `all_gather(out, chunk)` on 2, 3 and 4
ranks (NCCL where every rank has a GPU, gloo on the CPU elsewhere: gpulab.exercises.
collective_checks), with chunks of 1, 2, 31, 33, 1025 values and a large one. reduce_scatter
must leave on rank r chunk r of the sum over the ranks of x (x unchanged); all_gather, on inputs
of its own, every rank's chunk in rank order. The references are float64 and exact copies,
computed before the learner's file was loaded; inside the calls torch.distributed's collectives
are refused and every isend / irecv request must be waited on.

Timed (gpulab.exercises.speed) as one reduce_scatter then one all_gather of its result (the bytes
of an all-reduce), through a pool of ranks: yours, our expert's and the library's
reduce_scatter_tensor + all_gather_into_tensor take turns; the figure is busbw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import collective_checks as cc

ENTRY = "reduce_scatter"
PREPARE = False  # its check starts processes of its own
TIMED = cc.Timed(
    __file__,
    ENTRY,
    "reduce_scatter_tensor + all_gather_into_tensor (*_single in newer PyTorch)",
    "a reduce-scatter then an all-gather",
    least=cc.all_reduce_least,  # the two halves of an all-reduce, (w - 1) n values each
    ceiling="link",
)


def cases(ctx: api.Context) -> list[api.Case]:
    # The sizes are chunks: a rank's x holds `world` of them
    return [cc.case(ctx, w, [*cc.EDGE, ctx.big(4, w * w)], "values a chunk") for w in cc.WORLDS]


def _inputs(case: api.Case, rank: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per chunk size: rank `rank`'s x (world chunks) and its own chunk for all_gather."""
    w = case.args["world"]
    return [
        (cc.row(case, k, rank, w * c), cc.row(case, k, rank, c, part=1))
        for k, c in enumerate(case.args["sizes"])
    ]


def expected(case: api.Case, ctx: api.Context) -> list[tuple[np.ndarray, np.ndarray]]:
    w = case.args["world"]
    return [
        (
            cc.total(case, k, w * c),
            np.concatenate([cc.row(case, k, r, c, part=1) for r in range(w)]),
        )
        for k, c in enumerate(case.args["sizes"])
    ]


def before_load(rc: Any) -> None:
    cc.before_load(rc)


def rank(rc: Any, fn: Any, case: api.Case) -> list[dict[str, Any]]:
    """One rank: reduce_scatter on its row of x, all_gather on its own chunk, every size."""
    import torch

    gather = cc.partner(fn, "all_gather")
    out = []
    for x_mine, g_mine in _inputs(case, rc.rank):
        w, c = case.args["world"], g_mine.shape[0]
        x = torch.from_numpy(x_mine.copy()).to(rc.device)
        mine = torch.full((c,), float("nan"), device=rc.device)
        cc.call(fn, mine, x)
        scattered = cc.sent()
        chunk = torch.from_numpy(g_mine.copy()).to(rc.device)
        every = torch.full((w * c,), float("nan"), device=rc.device)
        cc.call(gather, every, chunk)
        gathered = cc.sent()
        cc.sync(rc.device)
        out.append(
            {
                "mine": mine.cpu().numpy(),
                "every": every.cpu().numpy(),
                "sent": (scattered, gathered),
                "x_kept": bool(np.array_equal(x.cpu().numpy(), x_mine)),
                "chunk_kept": bool(np.array_equal(chunk.cpu().numpy(), g_mine)),
            }
        )
    return out


def run(fn: Any, case: api.Case, ctx: api.Context) -> list[Any]:
    a = case.args
    return cc.launch(__file__, fn, ENTRY, case, a["world"], a["backend"])


def compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    world = case.args["world"]
    for k, (total, every) in enumerate(want):
        c = case.args["sizes"][k]
        for r in range(world):
            out = got[r][k]
            if not out["x_kept"]:
                return api.Mismatch(
                    f"rank {r}, chunks of {c:,}: reduce_scatter changed its input x: "
                    "sum into a scratch tensor of your own, the caller's x stays as it was"
                )
            if not out["chunk_kept"]:
                return api.Mismatch(f"rank {r}, chunks of {c:,}: all_gather changed its input")
            for what, want_r, got_r, fn_name in (
                ("out", total[r * c : (r + 1) * c], out["mine"], "reduce_scatter"),
                ("out", every, out["every"], "all_gather"),
            ):
                bad = api.compare_arrays(want_r, got_r, name=what, rtol=cc.RTOL, atol=cc.ATOL)
                if bad is not None:
                    bad.message = f"rank {r}, chunks of {c:,}: {fn_name}'s {bad.message}"
                    return bad
        # Each half of an all-reduce moves (w - 1) n values in all, n = w c a rank
        for half, fn_name in enumerate(("reduce_scatter", "all_gather")):
            total = sum(got[r][k]["sent"][half] for r in range(world))
            least = 4 * cc.all_reduce_least(world * c, world) // 2
            why = cc.too_little(total, least, f"{fn_name} of chunks of {c:,}", world)
            if why:
                return api.Mismatch(f"chunks of {c:,}: {why}")
    return None


def pool_start(rc: Any, functions: list[Any]) -> Any:
    return cc.PoolState(rc, functions, cc.ReduceScatterAllGather)


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    return cc.spec(fn, ctx, TIMED)
