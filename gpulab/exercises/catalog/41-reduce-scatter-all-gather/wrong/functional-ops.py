# expect: is not allowed here
# family: library
"""Shortcut: both collectives by the library, through the functional collectives' dispatcher ops
(torch.ops._c10d_functional.*), which the guard's Python-level patches never see."""

import torch
import torch.distributed as dist

F = torch.ops._c10d_functional


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    world, name = dist.get_world_size(), dist.group.WORLD.group_name
    r = F.reduce_scatter_tensor(x, "sum", world, name)
    out.copy_(F.wait_tensor(r).view_as(out))


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    world, name = dist.get_world_size(), dist.group.WORLD.group_name
    r = F.all_gather_into_tensor(chunk.contiguous(), world, name)
    out.copy_(F.wait_tensor(r).view_as(out))
