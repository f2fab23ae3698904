# why: keeps every output alive in a list until the end instead of record_stream, and waits with torch.cuda.synchronize()
"""No record_stream: each step's output stays referenced until every copy back has landed, so
the allocator cannot hand its memory out while a copy reads it; the same for the chunks on the
GPU. One device-wide synchronize at the end."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}


def pipeline(chunks, outs, step):
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    up.wait_stream(main)
    alive = []  # every device tensor of this call, until the end
    with torch.cuda.stream(up):
        nxt = chunks[0].to("cuda", non_blocking=True) if chunks else None
    for i in range(len(chunks)):
        main.wait_stream(up)
        x = nxt
        if i + 1 < len(chunks):
            with torch.cuda.stream(up):
                nxt = chunks[i + 1].to("cuda", non_blocking=True)
        y = step(x)
        alive += [x, y]
        down.wait_stream(main)
        with torch.cuda.stream(down):
            outs[i].copy_(y, non_blocking=True)
    torch.cuda.synchronize()
    alive.clear()
