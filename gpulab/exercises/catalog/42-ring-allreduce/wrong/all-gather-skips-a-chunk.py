# expect: rank 0, 1 values: t[0]
# family: mistake
"""The all-gather runs world - 2 steps: every rank misses one finished chunk."""

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
        ops = [dist.P2POp(dist.isend, out, right), dist.P2POp(dist.irecv, got, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        into += got
    # All-gather: pass the finished chunks around the ring; each arrives where it belongs.
    for s in range(world - 2):  # one step short: a chunk never arrives
        out, into = chunks[(rank + 1 - s) % world], chunks[(rank - s) % world]
        ops = [dist.P2POp(dist.isend, out, right), dist.P2POp(dist.irecv, into, left)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
