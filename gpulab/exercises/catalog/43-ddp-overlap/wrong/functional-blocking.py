# expect: wait_tensor
# family: loose-property
"""Shortcut: a blocking all-reduce inside the hook through the functional op and wait_tensor
(torch.ops._c10d_functional), which the hook rules' waits (Work.wait, Future.wait/value,
cuda.synchronize) never see; the completed result handed back in a fresh future."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket):
    grads = bucket.buffer()
    torch.ops._c10d_functional.all_reduce_(grads, "sum", dist.group.WORLD.group_name)
    torch.ops._c10d_functional.wait_tensor(grads)
    grads.div_(dist.get_world_size())
    fut = torch.futures.Future()
    fut.set_result(grads)
    return fut
