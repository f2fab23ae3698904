"""Exercise: a ring all-reduce written from point-to-point messages."""

from __future__ import annotations

import torch


def ring_all_reduce(t: torch.Tensor) -> None:
    """Sum `t` over every rank of the default process group, in place: afterwards every rank's
    t holds the element-wise sum of all ranks' t.

    This runs on every rank at once, inside a process group joined already
    (dist.get_rank(), dist.get_world_size() work). Use only dist.send / dist.recv or
    dist.isend / dist.irecv (and .wait() on every request); the library's collectives
    (dist.all_reduce, reduce_scatter, all_gather, ...) are refused. Post each step's send and
    receive as one group, dist.batch_isend_irecv([dist.P2POp(dist.isend, ...),
    dist.P2POp(dist.irecv, ...)]): NCCL runs a rank's lone sends and receives in order, so an
    isend then an irecv on every rank deadlocks there (the check runs gloo the same way).

    TODO: split t into world_size chunks (t.tensor_split(world_size): views into t, and it
    copes with fewer values than ranks), then
    - reduce-scatter: world_size - 1 steps; at each, send one chunk's running sum to the rank on
      the right and add what the rank on the left sends into another chunk;
    - all-gather: world_size - 1 more steps passing the finished chunks around the ring.
    """
    raise NotImplementedError("write the ring: a reduce-scatter, then an all-gather")
