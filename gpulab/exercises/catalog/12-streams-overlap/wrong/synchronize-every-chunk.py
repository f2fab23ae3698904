# expect: waited on the host
"""Wrong: a side stream, but torch.cuda.synchronize() after every chunk "to be safe", with the
next copy queued only after it: the copy engine and the SMs still take turns."""

from __future__ import annotations

import torch


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    outs = []
    for chunk in chunks:
        with torch.cuda.stream(side):
            x = chunk.to("cuda", non_blocking=True)
        main.wait_stream(side)
        x.record_stream(main)
        outs.append(step(x))
        torch.cuda.synchronize()
    return outs
