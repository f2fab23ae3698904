"""Rank functions for the multi-process tests (importable, so spawned ranks can find them too)."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from gpulab.core.ranks import RankContext


def sum_of_ranks(rc: RankContext, base: float) -> dict[str, Any]:
    """Each rank contributes base + rank; every rank must see the same exact sum."""
    import torch
    import torch.distributed as dist

    t = torch.full((4,), base + rc.rank, device=rc.device)
    rc.progress(0.5, f"rank {rc.rank} reducing")
    dist.all_reduce(t)
    rc.log(f"rank {rc.rank} says hello")  # only rank 0's reaches the job
    rc.progress(1.0, "done")
    return {"rank": rc.rank, "pid": os.getpid(), "sum": t.tolist()}


def one_rank_fails(rc: RankContext, bad: int, how: str) -> None:
    """Rank `bad` raises (how="raise") or dies by SIGKILL (how="kill"); the others wait forever
    inside a collective it never joins."""
    import torch
    import torch.distributed as dist

    dist.barrier()
    if rc.rank == bad:
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise ValueError(f"rank {bad} broke on purpose")
    dist.all_reduce(torch.ones(1))  # never completes: rank `bad` is gone
    time.sleep(3600)


def spin(rc: RankContext, cooperative: bool) -> None:
    """Runs until stopped: checks for a cancel when cooperative, else only sleeps."""
    while True:
        if cooperative:
            rc.progress(0.1, "spinning")
        time.sleep(0.01)


def fails_with_a_collective_in_flight(rc: RankContext, bad: int) -> None:
    """Rank `bad` starts an all-reduce its peers never join, then raises: tearing its group down
    (or exiting, which joins gloo's worker threads) would wait for that all-reduce forever."""
    import torch
    import torch.distributed as dist

    dist.barrier()
    if rc.rank == bad:
        dist.all_reduce(torch.ones(1 << 16), async_op=True)
        raise ValueError("broke with a collective in flight")
    time.sleep(3600)


def exits_quietly(rc: RankContext, bad: int) -> None:
    """Rank `bad` calls sys.exit(0) (learner code may); the others wait in a collective."""
    import torch
    import torch.distributed as dist

    dist.barrier()
    if rc.rank == bad:
        sys.exit(0)
    dist.all_reduce(torch.ones(1))
    time.sleep(3600)
