# expect: your hook waits for its all-reduce: `dist.all_reduce(grads)`
# family: mistake
"""A blocking all-reduce: correct sums, but the backward pass stops at every bucket."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    grads = bucket.buffer()
    dist.all_reduce(grads)
    grads.div_(dist.get_world_size())
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(grads)
    return fut
