# expect: reached past torch.ops' names
# family: loose-property
"""Shortcut: functional-blocking's wait by another door. The all-reduce starts through the
functional op, then its result is waited on inside the hook through wait_tensor fetched from a
fresh torch._ops._OpNamespace("_c10d_functional"), an op packet the check never wrapped; the
completed sum handed back in a fresh future. The backward pass stops at every bucket. Before
the fix: pass on the CPU; the wait is now read from the profile of the hook's calls."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket):
    grads = bucket.buffer()
    torch.ops._c10d_functional.all_reduce_(grads, "sum", dist.group.WORLD.group_name)
    torch._ops._OpNamespace("_c10d_functional").wait_tensor(grads)
    grads.div_(dist.get_world_size())
    fut = torch.futures.Future()
    fut.set_result(grads)
    return fut
