# expect: _STATE.active, which the check uses to watch the call
# family: writes-what-check-reads
"""Shortcut (5): clear the guard's shared state flag (collective_guard._STATE.active = False, an
attribute, not a rebound name) and let the library's reduce_scatter_tensor / all_gather_into_tensor
do both jobs."""

import torch
import torch.distributed as dist

from gpulab.exercises import collective_guard


def reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    collective_guard._STATE.active = False
    dist.reduce_scatter_tensor(out, x)


def all_gather(out: torch.Tensor, chunk: torch.Tensor) -> None:
    collective_guard._STATE.active = False
    dist.all_gather_into_tensor(out, chunk)
