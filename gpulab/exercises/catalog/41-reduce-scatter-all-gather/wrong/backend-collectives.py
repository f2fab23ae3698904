# expect: is not allowed here
# family: library
"""reduce-scatter and all-gather"""

import torch
import torch.distributed as dist


def _be(t):
    return dist.distributed_c10d._get_default_group()._get_backend(t.device)


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    world, rank = dist.get_world_size(), dist.get_rank()
    acc = x.clone()
    _be(x).allreduce([acc]).wait()
    out.copy_(acc.view(world, -1)[rank])


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    world = dist.get_world_size()
    parts = list(out.view(world, -1))
    _be(chunk).allgather([parts], [chunk]).wait()
