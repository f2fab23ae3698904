# expect: torch.jit.wait
# family: loose-property
"""a DDP hook"""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket):
    grads = bucket.buffer()
    work = dist.all_reduce(grads, async_op=True)
    fut = work.get_future()
    torch.jit.wait(fut)  # the backward pass stops here until the sum has arrived
    grads.div_(dist.get_world_size())
    return fut.then(lambda f: grads)
