# why: a direct exchange, every send and receive of a phase in one group
"""Unusual but correct (not a ring): all_gather posts every send and receive of the whole
collective as ONE batch_isend_irecv group (rank r's chunk straight into slot r everywhere);
reduce_scatter posts one group sending chunk j of x to rank j and receiving every rank's copy of
chunk `rank` into a scratch, then sums."""

import torch
import torch.distributed as dist


def reduce_scatter(out, x):
    rank, world = dist.get_rank(), dist.get_world_size()
    parts = x.view(world, -1)
    got = torch.empty(world, parts.shape[1], dtype=x.dtype, device=x.device)
    ops = []
    for p in range(world):
        if p != rank:
            ops += [dist.P2POp(dist.isend, parts[p], p), dist.P2POp(dist.irecv, got[p], p)]
    if ops:
        for r in dist.batch_isend_irecv(ops):
            r.wait()
    got[rank].copy_(parts[rank])
    torch.sum(got, dim=0, out=out)


def all_gather(out, chunk):
    rank, world = dist.get_rank(), dist.get_world_size()
    parts = out.view(world, -1)
    parts[rank].copy_(chunk)
    ops = []
    for p in range(world):
        if p != rank:
            ops += [dist.P2POp(dist.isend, chunk, p), dist.P2POp(dist.irecv, parts[p], p)]
    if ops:
        for r in dist.batch_isend_irecv(ops):
            r.wait()
