# expect: pageable memory
"""Wrong: gathers the chunks into one host tensor first (torch.cat makes pageable memory) and
copies slices of it: every copy is staged by the CPU and cannot overlap the compute."""

from __future__ import annotations

import torch

_made: list[torch.cuda.Stream] = []  # the side stream, made once: only the mistake below differs


def _side_stream() -> torch.cuda.Stream:
    if not _made:
        _made.append(torch.cuda.Stream())
    return _made[0]


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    host = torch.cat(chunks)  # a new, pageable host tensor
    rows = [c.shape[0] for c in chunks]
    parts = list(host.split(rows))
    main, side = torch.cuda.current_stream(), _side_stream()
    side.wait_stream(main)
    with torch.cuda.stream(side):
        nxt = parts[0].to("cuda", non_blocking=True)
    outs = []
    for i in range(len(parts)):
        main.wait_stream(side)
        cur = nxt
        cur.record_stream(main)
        if i + 1 < len(parts):
            with torch.cuda.stream(side):
                nxt = parts[i + 1].to("cuda", non_blocking=True)
        outs.append(step(cur))
    return outs
