# expect: they were averaged somewhere else than in your hook
# family: loose-property
"""Shortcut (6, DDP's averaging faked): the hook communicates nothing and hands DDP each rank's own
gradients back (a completed future); a global optimizer step post-hook, registered at import,
averages the PARAMETERS over the ranks with a blocking all_reduce after every step (outside the
hook, so unguarded). SGD from equal weights: mean(p - lr g_r) = p - lr mean(g): same weights."""

import torch
import torch.distributed as dist
from torch.optim.optimizer import register_optimizer_step_post_hook


def _average(opt, args, kwargs):
    if not dist.is_initialized():
        return
    world = dist.get_world_size()
    with torch.no_grad():
        for group in opt.param_groups:
            for p in group["params"]:
                dist.all_reduce(p.data)
                p.data.div_(world)


register_optimizer_step_post_hook(_average)


def allreduce_hook(state, bucket):
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut
