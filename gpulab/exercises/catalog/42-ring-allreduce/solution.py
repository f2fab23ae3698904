"""Reference solution: a ring all-reduce, a reduce-scatter then an all-gather, n-1 steps each."""

from __future__ import annotations

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
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
