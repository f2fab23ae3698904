# expect: keep outputs from an earlier call
# family: memo
"""Shortcut (a memo keyed by shape and position). GPU-only: not run on the CPU box. The three
streams of the lesson, but each output is kept on the GPU, keyed by the step, the chunk's place in
the list and its shape, and a later call with the same key only copies the kept output back: no
copy in, no compute. The check's timed rounds hand the same step every round, with every chunk
rewritten in place and the list rotated by one more place (check.py's _rounds), and compare each
round's outputs with the serial pipeline's: the second timed round gets stale outputs, named
"does your code keep outputs from an earlier call?"."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}
_kept: dict[tuple, torch.Tensor] = {}


def pipeline(chunks, outs, step):
    if not chunks:
        return
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    up.wait_stream(main)
    for i, chunk in enumerate(chunks):
        key = (step, i, tuple(chunk.shape))
        y = _kept.get(key)
        if y is None:
            with torch.cuda.stream(up):
                x = chunk.to("cuda", non_blocking=True)
            main.wait_stream(up)
            x.record_stream(main)
            y = _kept[key] = step(x)
        down.wait_stream(main)
        with torch.cuda.stream(down):
            outs[i].copy_(y, non_blocking=True)
        y.record_stream(down)
    down.synchronize()
