# why: the ring runs the other way (send left, receive from the right)
"""Unusual but correct: the ring run the other way (send left, receive from the right), chunk
indices mirrored; each step one batch_isend_irecv group."""

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    to, frm = (rank - 1) % world, (rank + 1) % world
    chunks = t.tensor_split(world)
    scratch = torch.empty_like(chunks[0])
    for s in range(world - 1):
        out, into = chunks[(rank + s) % world], chunks[(rank + s + 1) % world]
        got = scratch[: into.numel()]
        for r in dist.batch_isend_irecv(
            [dist.P2POp(dist.irecv, got, frm), dist.P2POp(dist.isend, out, to)]
        ):
            r.wait()
        into.add_(got)
    for s in range(world - 1):
        out, into = chunks[(rank - 1 + s) % world], chunks[(rank + s) % world]
        for r in dist.batch_isend_irecv(
            [dist.P2POp(dist.irecv, into, frm), dist.P2POp(dist.isend, out, to)]
        ):
            r.wait()
