# expect: your hook waits for a thread's signal
# family: loose-property
"""Shortcut (1, a wait under another name): start the all-reduce async, register a done-callback
on its future that sets a threading.Event, and block on Event.wait() inside the hook: the backward
pass stops there exactly as with fut.wait(), but no guarded method is called."""

import threading

import torch.distributed as dist


def allreduce_hook(state, bucket):
    g = bucket.buffer()
    work = dist.all_reduce(g, async_op=True)
    fut = work.get_future()
    ev = threading.Event()
    fut.add_done_callback(lambda f: ev.set())
    ev.wait()  # blocks the backward pass until the sum is here
    world = dist.get_world_size()
    return fut.then(lambda f: f.value()[0].div_(world))
