# why: blocking send and recv, ordered by rank parity (even ranks send first) so no ring deadlocks
"""The ring with blocking dist.send / dist.recv: even ranks send then receive, odd ranks receive
then send. With an odd number of ranks two even ranks are neighbours, and the chain still ends:
rank 0's send waits for rank 1, which receives first."""

from __future__ import annotations

import torch
import torch.distributed as dist


def _exchange(out: torch.Tensor, into: torch.Tensor, right: int, left: int, rank: int) -> None:
    if rank % 2 == 0:
        dist.send(out, right)
        dist.recv(into, left)
    else:
        dist.recv(into, left)
        dist.send(out, right)


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    chunks = t.tensor_split(world)
    for s in range(world - 1):
        out, into = chunks[(rank - s) % world], chunks[(rank - s - 1) % world]
        got = torch.empty_like(into)
        _exchange(out, got, right, left, rank)
        into.add_(got)
    for s in range(world - 1):
        _exchange(chunks[(rank + 1 - s) % world], chunks[(rank - s) % world], right, left, rank)
