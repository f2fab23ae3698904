# expect: the library's all-reduce is not allowed here
# family: library
"""Shortcut: the library's all-reduce through the functional collectives' dispatcher op
(torch.ops._c10d_functional.all_reduce_), not the Python wrappers the guard patches."""

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    if dist.get_world_size() == 1:
        return
    name = dist.group.WORLD.group_name
    torch.ops._c10d_functional.all_reduce_(t, "sum", name)
    torch.ops._c10d_functional.wait_tensor(t)
