# expect: replayed no CUDA graph
# family: loose-property
"""Wrong here (a shortcut): no graph, the update eager through the foreach kernels, a few
launches for all 64 tensors. Fast, and not the exercise."""

from __future__ import annotations

import torch


def make_step(params, grads, momentum):
    bufs = [torch.zeros_like(p) for p in params]

    def step(lr_value):
        torch._foreach_mul_(bufs, momentum)
        torch._foreach_add_(bufs, grads)
        torch._foreach_add_(params, bufs, alpha=-lr_value)

    return step
