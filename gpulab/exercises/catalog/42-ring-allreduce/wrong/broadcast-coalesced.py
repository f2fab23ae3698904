# expect: the library's broadcast is not allowed here
# family: library
"""Shortcut (1, library under another name): torch.distributed._broadcast_coalesced is a C++
binding (DDP uses it to sync module states) that calls the process group's broadcast in C++,
past the guard's Python patches on ProcessGroup. Each rank broadcasts its tensor in turn and
every rank sums: an all-reduce built from the library's broadcast."""

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    pg = c10d._get_default_group()
    mine = t.clone()
    for src in range(world):
        buf = mine.clone() if src == rank else torch.empty_like(t)
        dist._broadcast_coalesced(pg, [buf], 256 * 1024 * 1024, src)
        if src != rank:
            t += buf
