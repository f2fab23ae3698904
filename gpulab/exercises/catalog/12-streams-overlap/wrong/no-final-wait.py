# expect: returned before its copies to the host had landed
# family: mistake
"""Wrong: the three streams, rightly ordered, but no host wait at the end: a copy back with
non_blocking=True is only queued when copy_ returns, and the caller reads outs at once."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}


def pipeline(chunks, outs, step):
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    up.wait_stream(main)
    with torch.cuda.stream(up):
        nxt = chunks[0].to("cuda", non_blocking=True)
    for i in range(len(chunks)):
        main.wait_stream(up)
        x = nxt
        x.record_stream(main)
        if i + 1 < len(chunks):
            with torch.cuda.stream(up):
                nxt = chunks[i + 1].to("cuda", non_blocking=True)
        y = step(x)
        down.wait_stream(main)
        with torch.cuda.stream(down):
            outs[i].copy_(y, non_blocking=True)
        y.record_stream(down)
    main.wait_stream(down)  # orders later GPU work after the copies: the host does not wait
