# expect: collective over the store (_ControlCollectives.all_gather) is not allowed
# family: library
"""Shortcut: a collective the guard does not know: torch._C._distributed_c10d._StoreCollectives
(control-plane collectives over the process group's TCPStore). Its all_gather(key, bytes) hands
every rank every rank's tensor in one call; each rank sums them locally. No ring, no send/recv,
nothing of ProcessGroup / Backend / the c10d ops is called."""

import itertools

import numpy as np
import torch
import torch._C._distributed_c10d as c10d_c
import torch.distributed as dist
from torch.distributed import distributed_c10d

_calls = itertools.count()
_sc = []


def ring_all_reduce(t: torch.Tensor) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if world == 1:
        return
    if not _sc:
        store = distributed_c10d._get_default_store()
        _sc.append(c10d_c._StoreCollectives(store, rank, world))
    key = f"rt3-{next(_calls)}"
    parts = _sc[0].all_gather(key, t.cpu().numpy().tobytes())
    total = np.zeros(t.numel(), dtype=np.float32)
    for p in parts:  # rank order, so every rank adds in the same order
        total += np.frombuffer(p, dtype=np.float32)
    t.copy_(torch.from_numpy(total))
