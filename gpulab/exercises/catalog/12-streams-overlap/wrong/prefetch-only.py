# expect: your copies back ran on the stream step() computes on
# family: mistake
"""Wrong (slow): the lesson's prefetcher, with each copy back queued on the compute stream after
its step. The copies in overlap; the copy back and the compute, the two larger stages, still
take turns."""

from __future__ import annotations

import torch

_side: list[torch.cuda.Stream] = []


def pipeline(chunks, outs, step):
    if not _side:
        _side.append(torch.cuda.Stream())
    main, side = torch.cuda.current_stream(), _side[0]
    side.wait_stream(main)
    with torch.cuda.stream(side):
        nxt = chunks[0].to("cuda", non_blocking=True)
    for i in range(len(chunks)):
        main.wait_stream(side)
        cur = nxt
        cur.record_stream(main)
        if i + 1 < len(chunks):
            with torch.cuda.stream(side):
                nxt = chunks[i + 1].to("cuda", non_blocking=True)
        outs[i].copy_(step(cur), non_blocking=True)  # on the compute stream
    main.synchronize()
