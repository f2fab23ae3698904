# expect: was never waited on
# family: property-proxy
"""Shortcut (unwaited request): each step's send is posted with isend and never waited on; calling
get_future() on its request (and dropping the future) marks it 'waited' in the guard's books
(collective_guard.get_future), so the wait rule is silent. Receives are blocking recvs, by parity."""

from __future__ import annotations

import torch
import torch.distributed as dist


def _step(send, recv, right, left, rank):
    if rank % 2:
        dist.recv(recv, left)
    w = dist.isend(send, right)  # never waited
    try:  # noqa: SIM105 - a learner's code, as written
        w.get_future()  # gloo raises 'not implemented', after the guard has counted it waited
    except RuntimeError:
        pass
    if rank % 2 == 0:
        dist.recv(recv, left)


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    chunks = t.tensor_split(world)
    scratch = torch.empty_like(chunks[0])
    for s in range(world - 1):
        out, into = chunks[(rank - s) % world], chunks[(rank - s - 1) % world]
        got = scratch[: into.numel()]
        _step(out, got, right, left, rank)
        into += got
    for s in range(world - 1):
        out, into = chunks[(rank + 1 - s) % world], chunks[(rank - s) % world]
        _step(out, into, right, left, rank)
