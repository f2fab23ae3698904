# expect: ran between two readings of a clock
# family: loose-property
"""Cheat (a red team's, 2026-11-30): the two copies of each kind the check counts are made, but
no clock is read; the figures are a guess (a typical PCIe 5 link, pageable a third of it)."""

import torch


def measure_h2d(nbytes):
    d = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    p = torch.ones(nbytes, dtype=torch.uint8)
    q = p.pin_memory()
    for _ in range(2):
        d.copy_(p)
        d.copy_(q)
    torch.cuda.synchronize()
    pinned = 40.0
    return {"pageable": pinned / 3, "pinned": pinned}
