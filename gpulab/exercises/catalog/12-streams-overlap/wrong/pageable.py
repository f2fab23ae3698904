# expect: from pageable memory
# family: loose-property
"""Wrong (a shortcut): gathers the chunks into one host tensor first (torch.cat makes pageable
memory) and copies slices of it, one copy in for all: the CPU stages it, and nothing overlaps."""

from __future__ import annotations

import torch


def pipeline(chunks, outs, step):
    rows = [c.shape[0] for c in chunks]
    everything = torch.cat(chunks).to("cuda", non_blocking=True)  # one pageable copy
    for x, out in zip(everything.split(rows), outs, strict=True):
        out.copy_(step(x), non_blocking=True)
    torch.cuda.synchronize()
