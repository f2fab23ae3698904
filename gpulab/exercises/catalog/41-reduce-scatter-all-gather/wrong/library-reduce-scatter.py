# expect: the library's reduce-scatter is not allowed here: `dist.reduce_scatter_tensor(out, x)`
# family: library
"""The reduce-scatter is the library's own; only the all-gather is written by hand."""

from __future__ import annotations

import torch
import torch.distributed as dist


def _exchange(send: torch.Tensor, recv: torch.Tensor, right: int, left: int) -> None:
    # One group: NCCL runs a rank's sends and receives in order, so an isend posted alone waits
    # for a receive its neighbour has queued behind a send of its own
    ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    dist.reduce_scatter_tensor(out, x)


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    parts = out.view(world, -1)
    parts[rank].copy_(chunk)
    # Pass the chunks around the ring: at step s, forward the one that arrived last
    for s in range(world - 1):
        _exchange(parts[(rank - s) % world], parts[(rank - s - 1) % world], right, left)
