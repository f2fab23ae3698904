# why: 8-ary levels over an (8, n/8) view, not pairs
"""Correct: each level views the values as 8 equal rows and adds the rows (7 adds of 1/8 of the
values: an 8-ary tree, one pass over memory per 3 binary levels); leftovers ride along."""

from __future__ import annotations

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    while x.numel() > 1:
        m = x.numel()
        if m >= 64:
            k = m // 8
            r = x[: 8 * k].view(8, k)
            y = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            if m > 8 * k:
                y = torch.cat((y, x[8 * k :]))
        else:
            half = m // 2
            y = x[:half] + x[m - half :]
            if m % 2:
                y = torch.cat((y, x[half : half + 1]))
        x = y
    return x.reshape(())
