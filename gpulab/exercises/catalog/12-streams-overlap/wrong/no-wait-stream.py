# expect: make the current stream wait for
"""Wrong: prefetches on a side stream but never makes the current stream wait for it, so
step() reads a chunk's buffer while its copy is still writing it."""

from __future__ import annotations

import torch

_made: list[torch.cuda.Stream] = []  # the side stream, made once: only the mistake below differs


def _side_stream() -> torch.cuda.Stream:
    if not _made:
        _made.append(torch.cuda.Stream())
    return _made[0]


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    main, side = torch.cuda.current_stream(), _side_stream()
    with torch.cuda.stream(side):
        nxt = chunks[0].to("cuda", non_blocking=True)
    outs = []
    for i in range(len(chunks)):
        cur = nxt
        cur.record_stream(main)
        if i + 1 < len(chunks):
            with torch.cuda.stream(side):
                nxt = chunks[i + 1].to("cuda", non_blocking=True)
        outs.append(step(cur))  # no main.wait_stream(side): nothing orders it after the copy
    side.synchronize()
    return outs
