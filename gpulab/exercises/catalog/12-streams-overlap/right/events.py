# why: orders the stages with one CUDA event per chunk and stage instead of wait_stream, and queues every copy in at once
"""All the copies in are queued up front on their stream, each followed by an event; each step
waits for its own chunk's event only, and each copy back for its own step's event."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}


def pipeline(chunks, outs, step):
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    start = torch.cuda.Event()
    start.record(main)
    up.wait_event(start)
    landed, staged = [], []
    for chunk in chunks:  # the copy-in stream runs ahead of the steps
        with torch.cuda.stream(up):
            staged.append(chunk.to("cuda", non_blocking=True))
            ev = torch.cuda.Event()
            ev.record(up)
        landed.append(ev)
    for x, ev, out in zip(staged, landed, outs, strict=True):
        main.wait_event(ev)
        x.record_stream(main)
        y = step(x)
        done = torch.cuda.Event()
        done.record(main)
        down.wait_event(done)
        with torch.cuda.stream(down):
            out.copy_(y, non_blocking=True)
        y.record_stream(down)
    finished = torch.cuda.Event()
    finished.record(down)
    finished.synchronize()  # the last copy back has landed: outs is ready on the host
