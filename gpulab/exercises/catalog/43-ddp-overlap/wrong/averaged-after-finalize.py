# expect: what your hook's futures delivered
# family: loose-property
"""Shortcut: the hook communicates nothing and hands DDP each rank's own bucket back (a completed
future), but queues an autograd final callback which queues a second one: the second runs after
DDP's own finalize (queued later by the reducer) has copied the bucket into .grad, and averages
those .grad with a blocking dist.all_reduce (outside the hook's call, so unguarded). Gradients
are the whole batch's mean when backward() returns, weights right: the check reads only .grad."""

import torch
import torch.distributed as dist

_engine = torch.autograd.Variable._execution_engine


def allreduce_hook(state, bucket):
    params = list(bucket.parameters())
    world = dist.get_world_size()

    def average():
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad.div_(world)

    _engine.queue_callback(lambda: _engine.queue_callback(average))
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut
