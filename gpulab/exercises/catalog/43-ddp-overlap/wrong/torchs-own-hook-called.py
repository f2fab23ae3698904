# expect: hands the bucket to torch's own allreduce_hook
# family: library
"""Shortcut (the library's answer behind a one-line hook): the hook hands the bucket to torch's
own `allreduce_hook`, which starts the all-reduce and divides in a `then()` exactly as the
exercise asks, so nothing the check watched was wrong. Before the fix: pass. Now every function of
torch's DDP hook modules (default_hooks, powerSGD_hook) used inside a learner's hook is named."""

from torch.distributed.algorithms.ddp_comm_hooks import default_hooks


def allreduce_hook(state, bucket):
    return default_hooks.allreduce_hook(state, bucket)
