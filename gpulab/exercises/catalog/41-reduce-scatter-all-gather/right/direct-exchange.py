# why: no ring: in round k every rank exchanges directly with the ranks k away (all-to-all style)
"""Each rank sends chunk j of x straight to rank j (reduce-scatter) and its chunk straight to every
rank (all-gather), one partner pair per round, so no message is forwarded. Fewer steps per byte,
but every rank needs a link to every other: a ring needs only neighbours."""

from __future__ import annotations

import torch
import torch.distributed as dist


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = x.view(world, -1)
    out.copy_(chunks[rank])
    got = torch.empty_like(out)
    for k in range(1, world):
        to, frm = (rank + k) % world, (rank - k) % world
        ops = [dist.P2POp(dist.isend, chunks[to], to), dist.P2POp(dist.irecv, got, frm)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        out += got


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    parts = out.view(world, -1)
    parts[rank].copy_(chunk)
    for k in range(1, world):
        to, frm = (rank + k) % world, (rank - k) % world
        ops = [dist.P2POp(dist.isend, chunk, to), dist.P2POp(dist.irecv, parts[frm], frm)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
