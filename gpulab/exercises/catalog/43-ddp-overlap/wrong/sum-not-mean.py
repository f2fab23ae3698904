# expect: not their mean: divide the bucket by the world size
# family: mistake
"""The all-reduce overlaps, but the gradients are summed, never divided."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    work = dist.all_reduce(bucket.buffer(), async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])
