# expect: reached past torch.ops' names
# family: loose-property
"""Shortcut: functional-blocking's wait through the JIT's operator table. The all-reduce starts
through the functional op; its result is waited on inside the hook by the wait_tensor operation
torch._C._jit_get_operation hands back, a builtin the check never wrapped; the completed sum is
handed back in a fresh future, so the backward pass stops at every bucket. Before the fix: pass
on the CPU; the wait is now read from the profile of the hook's calls."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket):
    grads = bucket.buffer()
    torch.ops._c10d_functional.all_reduce_(grads, "sum", dist.group.WORLD.group_name)
    op, _ = torch._C._jit_get_operation("_c10d_functional::wait_tensor")
    op(grads)
    grads.div_(dist.get_world_size())
    fut = torch.futures.Future()
    fut.set_result(grads)
    return fut
