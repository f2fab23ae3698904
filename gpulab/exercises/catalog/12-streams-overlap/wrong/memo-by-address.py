# expect: keep outputs from an earlier call
# family: memo
"""Wrong (a shortcut): keeps each chunk's output on the GPU, keyed by the step and the chunk's
address, and on a later call copies the kept outputs back instead of copying in and computing
again. The check rewrites every chunk in place before each timed call: the kept outputs are
stale."""

from __future__ import annotations

import torch

_kept: dict[tuple, torch.Tensor] = {}


def pipeline(chunks, outs, step):
    for chunk, out in zip(chunks, outs, strict=True):
        key = (step, chunk.data_ptr())  # the step itself in the key: a new case, a new step
        y = _kept.get(key)
        if y is None:
            y = _kept[key] = step(chunk.to("cuda", non_blocking=True))
        out.copy_(y, non_blocking=True)
    torch.cuda.synchronize()
