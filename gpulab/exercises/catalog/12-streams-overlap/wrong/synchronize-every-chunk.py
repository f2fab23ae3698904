# expect: waited on the host
# family: mistake
"""Wrong (slow): three streams, but torch.cuda.synchronize() after every chunk "to be safe", so
the next chunk is queued only once the GPU is idle: the engines take turns again."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}


def pipeline(chunks, outs, step):
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    for chunk, out in zip(chunks, outs, strict=True):
        with torch.cuda.stream(up):
            x = chunk.to("cuda", non_blocking=True)
        main.wait_stream(up)
        x.record_stream(main)
        y = step(x)
        down.wait_stream(main)
        with torch.cuda.stream(down):
            out.copy_(y, non_blocking=True)
        y.record_stream(down)
        torch.cuda.synchronize()
