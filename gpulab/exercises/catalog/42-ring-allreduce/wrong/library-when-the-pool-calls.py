# expect: reads the callers' frames
# family: timed-vs-checked
"""Shortcut (timed told from checked, by the stack): the timed calls come from the timing pool in
gpulab's collective_checks, so a call with a frame of collective_checks.py on its stack hands the
work to the library's all-reduce; the checked calls, which come from the check's own rank code,
get the ring."""

from __future__ import annotations

import inspect

import torch
import torch.distributed as dist


def _timed() -> bool:
    return any(f.filename.endswith("collective_checks.py") for f in inspect.stack(0))


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    if _timed():
        dist.all_reduce(t)
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    # tensor_split, not chunk: it gives `world` parts even when t has fewer values than ranks
    chunks = t.tensor_split(world)
    scratch = torch.empty_like(chunks[0])
    # Reduce-scatter: at step s, send the running sum of chunk (rank - s) to the right and add
    # the left neighbour's sum of chunk (rank - s - 1) into ours. After world - 1 steps, chunk
    # (rank + 1) holds the sum over every rank.
    for s in range(world - 1):
        out, into = chunks[(rank - s) % world], chunks[(rank - s - 1) % world]
        got = scratch[: into.numel()]
        # The send and the receive as one group (batch_isend_irecv): NCCL runs a rank's sends
        # and receives in order, so an isend posted on its own waits for a receive the
        # neighbour has queued behind a send of its own, and every rank waits
        ops = [dist.P2POp(dist.isend, out, right), dist.P2POp(dist.irecv, got, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        into += got
    # All-gather: pass the finished chunks around the ring; each arrives where it belongs.
    for s in range(world - 1):
        out, into = chunks[(rank + 1 - s) % world], chunks[(rank - s) % world]
        ops = [dist.P2POp(dist.isend, out, right), dist.P2POp(dist.irecv, into, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
