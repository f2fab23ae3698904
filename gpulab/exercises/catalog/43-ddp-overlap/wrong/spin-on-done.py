# expect: by polling done()
# family: loose-property
"""Shortcut (the wait the lesson removes, by another name): start the all-reduce async, then spin
on the future's done() until the sum has arrived, all inside the hook; divide and return the
(now completed) future. Nothing overlaps: the backward pass stops here as with a wait()."""

import time

import torch
import torch.distributed as dist


def allreduce_hook(state, bucket):
    grads = bucket.buffer()
    work = dist.all_reduce(grads, async_op=True)
    fut = work.get_future()
    while not fut.done():  # a wait, spelled as a poll
        time.sleep(0)
    grads.div_(dist.get_world_size())
    done = torch.futures.Future()
    done.set_result(grads)
    return done
