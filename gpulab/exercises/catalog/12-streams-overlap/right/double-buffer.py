# why: two device buffers allocated once and reused in turn, with the copy stream waiting for the step that last read a buffer
"""Classic double buffering: no allocation in the loop. Copy chunk i+1 into the buffer step(i-1)
read, after that step has finished with it (an event), while step(i) runs on the other."""

from __future__ import annotations

import torch

_side: list[torch.cuda.Stream] = []  # made on the first call, reused by every later one


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    if not chunks:
        return []
    if not _side:
        _side.append(torch.cuda.Stream())
    main, side = torch.cuda.current_stream(), _side[0]
    rows = max(c.shape[0] for c in chunks)
    bufs = [torch.empty(rows, chunks[0].shape[1], device="cuda") for _ in range(2)]
    copied = [torch.cuda.Event(), torch.cuda.Event()]
    freed = [torch.cuda.Event(), torch.cuda.Event()]

    def load(i: int) -> None:
        b = i % 2
        with torch.cuda.stream(side):
            side.wait_event(freed[b])  # the step that read this buffer last is done with it
            bufs[b][: chunks[i].shape[0]].copy_(chunks[i], non_blocking=True)
            copied[b].record(side)

    for e in freed:
        e.record(main)  # the buffers were made on the main stream
    load(0)
    outs = []
    for i in range(len(chunks)):
        b = i % 2
        if i + 1 < len(chunks):
            load(i + 1)
        main.wait_event(copied[b])
        outs.append(step(bufs[b][: chunks[i].shape[0]]))
        freed[b].record(main)
    return outs
