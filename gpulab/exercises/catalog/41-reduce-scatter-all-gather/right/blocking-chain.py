# why: a blocking chain of sends and receives, receives posted before sends in each group
"""Correct: blocking dist.send / dist.recv in a chain order (rank 0 sends first, the others
receive first), reduce_scatter's running sums out of place (send = got + x chunk); all_gather
with the irecv posted before the isend in each group, each request waited on."""

import torch
import torch.distributed as dist


def _step(send, into, right, left, rank):
    if rank == 0:
        dist.send(send.contiguous(), right)
        dist.recv(into, left)
    else:
        buf = torch.empty_like(into)
        dist.recv(buf, left)
        dist.send(send.contiguous(), right)
        into.copy_(buf)


def reduce_scatter(out, x):
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    xs = x.view(world, -1)
    send = xs[(rank - 1) % world].clone()
    got = torch.empty_like(out)
    for s in range(world - 1):
        _step(send, got, right, left, rank)
        send = got + xs[(rank - s - 2) % world]
    out.copy_(send if world > 1 else xs[0])


def all_gather(out, chunk):
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    parts = out.view(world, -1)
    parts[rank].copy_(chunk)
    for s in range(world - 1):
        ops = [
            dist.P2POp(dist.irecv, parts[(rank - s - 1) % world], left),
            dist.P2POp(dist.isend, parts[(rank - s) % world], right),
        ]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
