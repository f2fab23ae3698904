# expect: reduce_scatter changed its input x
# family: mistake
"""The running sums go into x itself: the caller's tensor comes back changed."""

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
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    # Running sums in a copy: the caller's x stays as it was
    acc = x.view(world, -1)  # sums straight into the caller's x
    got = torch.empty_like(acc[0])
    # Step s sends the running sum of chunk (rank - s - 1) and adds the left's into chunk
    # (rank - s - 2): the last chunk summed, after world - 1 steps, is chunk `rank`
    for s in range(world - 1):
        _exchange(acc[(rank - s - 1) % world], got, right, left)
        acc[(rank - s - 2) % world] += got
    out.copy_(acc[rank])


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    parts = out.view(world, -1)
    parts[rank].copy_(chunk)
    # Pass the chunks around the ring: at step s, forward the one that arrived last
    for s in range(world - 1):
        _exchange(parts[(rank - s) % world], parts[(rank - s - 1) % world], right, left)
