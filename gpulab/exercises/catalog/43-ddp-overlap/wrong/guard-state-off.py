# expect: _STATE.active, which the check uses to watch the call
# family: writes-what-check-reads
"""Shortcut (5): the hook clears the guard's shared flag (collective_guard._STATE.active = False,
an attribute, not a rebound name), runs a BLOCKING all_reduce (no overlap at all), divides and
returns an already-completed future. Nothing records the wait."""

import torch
import torch.distributed as dist

from gpulab.exercises import collective_guard


def allreduce_hook(state, bucket):
    collective_guard._STATE.active = False
    g = bucket.buffer()
    dist.all_reduce(g)
    g.div_(dist.get_world_size())
    fut = torch.futures.Future()
    fut.set_result(g)
    return fut
