# expect: your copies in and back all ran on the stream step() computes on
# family: mistake
"""Wrong (slow): copy in, compute, copy back on one stream, chunk after chunk. non_blocking
frees the host, not the engines: they take turns."""

from __future__ import annotations

import torch


def pipeline(chunks, outs, step):
    for chunk, out in zip(chunks, outs, strict=True):
        out.copy_(step(chunk.to("cuda", non_blocking=True)), non_blocking=True)
    torch.cuda.synchronize()
