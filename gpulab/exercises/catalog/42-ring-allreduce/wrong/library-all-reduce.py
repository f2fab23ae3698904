# expect: the library's all-reduce is not allowed here: `dist.all_reduce(t)` (line 15 of library-all-reduce.py)
# family: library
"""The library's all-reduce does the whole job in one call."""

from __future__ import annotations

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    if dist.get_world_size() == 1:
        return
    # "It is a ring inside anyway"
    dist.all_reduce(t)
