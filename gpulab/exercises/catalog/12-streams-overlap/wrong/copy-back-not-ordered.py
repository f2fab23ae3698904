# expect: make each copy back wait for its step
# family: mistake
"""Wrong: the copies back have their own stream, but nothing orders a copy back after the step
that makes its output: it copies whatever the new output's memory held."""

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
        with torch.cuda.stream(down):  # no down.wait_stream(main): may run before step(i)
            outs[i].copy_(y, non_blocking=True)
        y.record_stream(down)
    down.synchronize()
