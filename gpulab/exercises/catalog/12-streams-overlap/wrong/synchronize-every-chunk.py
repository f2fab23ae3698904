# expect: waited on the host
"""Wrong: a side stream, but torch.cuda.synchronize() after every chunk "to be safe", with the
next copy queued only after it: the copy engine and the SMs still take turns."""

from __future__ import annotations

import torch

_made: list[torch.cuda.Stream] = []  # the side stream, made once: only the mistake below differs


def _side_stream() -> torch.cuda.Stream:
    if not _made:
        _made.append(torch.cuda.Stream())
    return _made[0]


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    main, side = torch.cuda.current_stream(), _side_stream()
    outs = []
    for chunk in chunks:
        with torch.cuda.stream(side):
            x = chunk.to("cuda", non_blocking=True)
        main.wait_stream(side)
        x.record_stream(main)
        outs.append(step(x))
        torch.cuda.synchronize()
    return outs
