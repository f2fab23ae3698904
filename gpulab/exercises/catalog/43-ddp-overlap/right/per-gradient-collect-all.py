# why: one async all-reduce a gradient, joined by collect_all().then()
"""Correct: one async all_reduce per gradient of the bucket (bucket.gradients(), views of its
buffer), their futures joined with torch.futures.collect_all and the division chained with
.then(): nothing waits in the hook."""

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket):
    world = dist.get_world_size()
    buf = bucket.buffer()
    futs = [dist.all_reduce(g, async_op=True).get_future() for g in bucket.gradients()]
    # gradients() may be copies: copy each summed gradient back into its place in the buffer
    offsets, at = [], 0
    for g in bucket.gradients():
        offsets.append((at, g))
        at += g.numel()

    def done(_fut):
        for at_, g in offsets:
            buf[at_ : at_ + g.numel()].copy_(g.view(-1))
        return buf.div_(world)

    return torch.futures.collect_all(futs).then(done)
