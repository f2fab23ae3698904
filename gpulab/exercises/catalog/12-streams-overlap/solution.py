"""A three-stage pipeline: copies in on one side stream, step() on the current stream, copies
back on another side stream, each stage ordered after the one before it; one host wait, at the end."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}  # made on the first call, reused by every later one


def pipeline(chunks: list[torch.Tensor], outs: list[torch.Tensor], step) -> None:
    """outs[i] = step(chunks[i]) for every chunk, on the host when this returns."""
    if not chunks:
        return
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    up.wait_stream(main)  # the chunks may come from work queued before this call

    def load(i: int) -> torch.Tensor:
        with torch.cuda.stream(up):
            return chunks[i].to("cuda", non_blocking=True)

    nxt = load(0)
    for i in range(len(chunks)):
        main.wait_stream(up)  # step(i) must not read chunk i before its copy has landed
        x = nxt
        x.record_stream(main)  # made on `up`, read on `main`: not reused before step(i) ran
        if i + 1 < len(chunks):
            nxt = load(i + 1)  # on the copy-in engine while step(i) computes
        y = step(x)
        down.wait_stream(main)  # the copy back of chunk i after step(i)
        with torch.cuda.stream(down):
            outs[i].copy_(y, non_blocking=True)  # on the copy-back engine while step(i+1) runs
        y.record_stream(down)  # made on `main`, read on `down`: kept until the copy has run
    down.synchronize()  # outs is host memory: the caller may read it only once it has landed
