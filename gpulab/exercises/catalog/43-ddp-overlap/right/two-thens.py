# why: the division and a copy chained as two .then() callbacks on the all-reduce's future
"""hook: start the all-reduce, chain two then()s (correct)"""

import torch.distributed as dist


def allreduce_hook(state, bucket):
    world = dist.get_world_size()
    fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
    summed = fut.then(lambda f: f.value()[0])
    return summed.then(lambda f: f.value() / world)
