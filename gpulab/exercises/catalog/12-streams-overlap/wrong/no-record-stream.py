# expect: record_stream
"""Wrong: allocates each chunk on the side stream and uses it on the current one without
record_stream: once dropped, its memory goes back to the side stream's pool and the copy of a
later chunk lands in it while step() still reads it."""

from __future__ import annotations

import torch

_made: list[torch.cuda.Stream] = []  # the side stream, made once: only the mistake below differs


def _side_stream() -> torch.cuda.Stream:
    if not _made:
        _made.append(torch.cuda.Stream())
    return _made[0]


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    main, side = torch.cuda.current_stream(), _side_stream()
    side.wait_stream(main)
    with torch.cuda.stream(side):
        nxt = chunks[0].to("cuda", non_blocking=True)
    outs = []
    for i in range(len(chunks)):
        main.wait_stream(side)
        cur = nxt
        if i + 1 < len(chunks):
            with torch.cuda.stream(side):
                nxt = chunks[i + 1].to("cuda", non_blocking=True)
        outs.append(step(cur))
    return outs
