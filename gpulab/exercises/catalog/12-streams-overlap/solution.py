"""Overlap copies with compute: prefetch the next chunk on a side stream (double buffering)."""

from __future__ import annotations

import torch

_side: torch.cuda.Stream | None = None  # one copy stream for every call, made on first use


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    """[step(chunk on the GPU) for every chunk], each copy queued one chunk ahead on a side
    stream so it runs while the previous chunk computes."""
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    main, side = torch.cuda.current_stream(), _side
    side.wait_stream(main)  # the chunks' buffers may come from work queued before this call

    def prefetch(chunk: torch.Tensor) -> torch.Tensor:
        with torch.cuda.stream(side):
            return chunk.to("cuda", non_blocking=True)

    outs = []
    nxt = prefetch(chunks[0]) if chunks else None
    for i in range(len(chunks)):
        main.wait_stream(side)  # step() must not read the chunk before its copy has landed
        cur = nxt
        # cur was allocated on the side stream: tell the allocator the main stream uses it,
        # so its memory is not handed to a later copy while step() still reads it
        cur.record_stream(main)
        if i + 1 < len(chunks):
            nxt = prefetch(chunks[i + 1])  # runs on the copy engine while step(cur) computes
        outs.append(step(cur))
    return outs
