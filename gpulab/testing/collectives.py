"""Rank functions for the tests of the collective exercises' rules (gpulab.exercises.
collective_guard): importable, so ranks started from the fork server find them."""

from __future__ import annotations

import contextlib
from typing import Any

from gpulab.core.ranks import RankContext
from gpulab.exercises import collective_guard as guard

LEARNER = "/nowhere/learner.py"  # the file the rules' messages name


def _try(fn: Any, mode: str = "p2p") -> str:
    """'' when `fn()` keeps the rules, else the first thing the rules said."""
    if mode == "hook":
        with guard.recording(LEARNER) as found:
            fn()
        return found[0] if found else ""
    try:
        with guard.watching(LEARNER):
            fn()
    except guard.Refused as exc:
        return str(exc)
    return ""


def p2p_rules(rc: RankContext) -> dict[str, str]:
    """On 2 ranks: what the P2P and HOOK rules say about each way of writing a step."""
    import torch
    import torch.distributed as dist
    from torch.distributed import _functional_collectives as fc

    guard.install()
    peer = 1 - rc.rank
    t, got = torch.ones(4), torch.empty(4)

    # Lone requests in an order NCCL can run (a rank's sends and receives go in order there,
    # and the guard gives gloo that order): rank 0 sends first, rank 1 receives first
    def exchange() -> None:
        posts = [lambda: dist.isend(t, peer), lambda: dist.irecv(got, peer)]
        for r in [post() for post in (posts if rc.rank == 0 else posts[::-1])]:
            assert r is not None
            r.wait()

    def batched() -> None:
        ops = [dist.P2POp(dist.isend, t, peer), dist.P2POp(dist.irecv, got, peer)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()

    def unwaited() -> None:
        if rc.rank == 1:
            dist.recv(got, peer)
        dist.isend(t, peer)
        if rc.rank == 0:
            dist.recv(got, peer)

    def caught() -> None:
        with contextlib.suppress(Exception):  # the learner's own catch must change nothing
            dist.all_reduce(t)

    world: Any = dist.group.WORLD
    said = {
        "exchange": _try(exchange),
        "batched": _try(batched),
        "all_reduce": _try(lambda: dist.all_reduce(t)),
        "group": _try(lambda: world.allreduce([t])),
        "functional": _try(lambda: fc.all_reduce(t, "sum", world)),
        "caught": _try(caught),
        "unwaited": _try(unwaited),
    }
    dist.barrier()  # the unwaited isend has landed on both sides before the hook rules run
    work_box: list[Any] = []

    def returns_future() -> None:
        work_box.append(dist.all_reduce(t, async_op=True).get_future())

    def blocking() -> None:
        dist.all_reduce(t)

    def never_waited() -> None:
        work_box.append(dist.all_reduce(t, async_op=True))

    said["hook_future"] = _try(returns_future, "hook")
    said["hook_blocking"] = _try(blocking, "hook")
    said["hook_never_waited"] = _try(never_waited, "hook")
    for w in work_box:
        w.wait()
    said["outside"] = str(float(torch.ones(1).add(0).sum()))  # nothing guarded outside a call
    dist.all_reduce(torch.ones(1))  # the check's own collectives pass
    return said
