# expect: the all-reduce (line 12 of future-not-returned.py) in your hook is never waited on
# family: mistake
"""The all-reduce starts, but the hook hands back a future of its own, completed at once: DDP
never waits for the communication."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    grads = bucket.buffer().div_(dist.get_world_size())
    dist.all_reduce(grads, async_op=True)
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(grads)
    return fut
