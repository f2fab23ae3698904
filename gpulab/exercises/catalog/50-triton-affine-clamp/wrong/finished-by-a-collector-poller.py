# expect: left a hook on (gc.set_threshold)
# family: lazy
"""Shortcut (work finished after the call, by the garbage collector): a one-element launch of
the learner's kernel makes the call look like theirs; an object in a reference cycle whose
__del__ makes another like it while the check's watch is on (a poller the collector runs), with
the collector's threshold at 1 so it runs at nearly every allocation. Once the watch is off, the
next collection lets torch's addcmul and clamp_ write out before the check reads it."""

import gc
import threading

import torch
import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    inside = offsets < 1
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=inside, other=0.0), mask=inside)


class _Poll:
    def __init__(self, job):
        self.job = job
        self.me = self  # a cycle: only the collector frees it

    def __del__(self):
        x = self.job[0]
        if threading.Thread.start.__module__ != "threading" or torch.overrides.has_torch_function(
            (x,)
        ):
            _Poll(self.job)  # the watch is still on: ask again at the next collection
            return
        x, scale, bias, lo, hi, out = self.job
        torch.addcmul(bias, x, scale, out=out)
        out.clamp_(lo, hi)


def affine_clamp(x, scale, bias, lo, hi, out):
    affine_clamp_kernel[(1,)](x, out, BLOCK=16)
    gc.set_threshold(1)
    _Poll((x, scale, bias, lo, hi, out.view(out.shape)))
