"""Exercise: a reduce-scatter and an all-gather written from point-to-point messages."""

from __future__ import annotations

import torch


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    """x holds world_size equal chunks (x.view(world_size, -1)). Write into `out` (one chunk's
    size) chunk number `rank` of the element-wise sum of every rank's x. Leave x unchanged.

    Runs on every rank at once, in a process group joined already. Use only dist.send /
    dist.recv or dist.isend / dist.irecv (and .wait() on every request): the library's
    collectives are refused. Post each step's send and receive as one group
    (dist.batch_isend_irecv): NCCL runs a rank's lone sends and receives in order, so an isend
    then an irecv on every rank deadlocks there (the check runs gloo the same way).

    TODO: a ring. Each rank sends to (rank + 1) % world_size and receives from
    (rank - 1) % world_size; in world_size - 1 steps, pass running sums along, adding the
    incoming one into your own copy, so that the last chunk you complete is chunk `rank`.
    """
    raise NotImplementedError("write the ring reduce-scatter")


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    """Write every rank's `chunk` into `out` (world_size chunks), in rank order: chunk r of
    out is rank r's chunk.

    TODO: put your own chunk in place, then world_size - 1 ring steps, each forwarding the
    chunk that arrived in the step before.
    """
    raise NotImplementedError("write the ring all-gather")
