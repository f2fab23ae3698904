# expect: your hook waits for every rank (monitored_barrier)
# family: loose-property
"""Shortcut (a wait by a name the check did not watch): the hook starts its all-reduce, then
stops every rank at gloo's `dist.monitored_barrier()`, which blocks in C++ until every rank has
reached it and hands back no Work to wait on, so none of the watched waits ran. `dist.barrier()`
at the same line was named; this passed (only correctness is checked on the CPU, and NCCL has no
monitored barrier). Before the fix: pass. Now the group's and its backend's
`monitored_barrier`, and the dispatcher's `c10d.monitored_barrier_`, are waits in a hook."""

import torch.distributed as dist


def allreduce_hook(state, bucket):
    grads = bucket.buffer()
    fut = dist.all_reduce(grads, async_op=True).get_future()
    dist.monitored_barrier()
    return fut.then(lambda f: f.value()[0].div_(dist.get_world_size()))
