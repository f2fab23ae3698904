# why: two input and two output buffers allocated once per call and reused in turn, each reuse ordered with events (no record_stream, no allocation in the loop)
"""Double buffering on both ends: chunk i is copied into in_bufs[i % 2], its output is copied
into out_bufs[i % 2] on the compute stream, and the copy back reads it from there. A buffer is
written again only after the stage that read it last has run (events)."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}


def pipeline(chunks, outs, step):
    if not chunks:
        return
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    rows = max(c.shape[0] for c in chunks)
    in_bufs = [torch.empty(rows, chunks[0].shape[1], device="cuda") for _ in range(2)]
    out_bufs = [torch.empty(rows, outs[0].shape[1], device="cuda") for _ in range(2)]
    copied_in = [torch.cuda.Event() for _ in range(2)]
    stepped = [torch.cuda.Event() for _ in range(2)]  # in_bufs[b] read, out_bufs[b] written
    copied_back = [torch.cuda.Event() for _ in range(2)]  # out_bufs[b] read
    for ev in (*stepped, *copied_back):
        ev.record(main)  # the buffers were made on the main stream

    def load(i):
        b, n = i % 2, chunks[i].shape[0]
        with torch.cuda.stream(up):
            up.wait_event(stepped[b])  # the step that read this buffer last is done with it
            in_bufs[b][:n].copy_(chunks[i], non_blocking=True)
            copied_in[b].record(up)

    load(0)
    for i in range(len(chunks)):
        b, n = i % 2, chunks[i].shape[0]
        if i + 1 < len(chunks):
            load(i + 1)
        main.wait_event(copied_in[b])
        main.wait_event(copied_back[b])  # out_bufs[b]'s last copy back has read it
        out_bufs[b][:n].copy_(step(in_bufs[b][:n]))
        stepped[b].record(main)
        with torch.cuda.stream(down):
            down.wait_event(stepped[b])
            outs[i].copy_(out_bufs[b][:n], non_blocking=True)
            copied_back[b].record(down)
    down.synchronize()
