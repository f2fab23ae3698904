# expect: record_stream on the stream that reads it
# family: mistake
"""Wrong: each output is made on the compute stream and copied back on another, but dropped
without record_stream: its memory returns to the compute stream's pool at once, and a later
step writes into it while the copy back still reads it."""

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
        # no y.record_stream(down): y is dropped at the next step
    down.synchronize()
