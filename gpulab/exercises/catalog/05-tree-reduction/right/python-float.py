# why: returns a Python float (.item()) instead of a 0-dim tensor, and halves with torch.add(out=)
"""Halves added into a preallocated buffer; the answer comes back as a plain float."""

import torch


def tree_sum(x: torch.Tensor) -> float:
    x = x.reshape(-1)
    buf = torch.empty((x.numel() + 1) // 2, dtype=x.dtype, device=x.device)
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        out = buf[: m - half]
        torch.add(x[:half], x[half : 2 * half], out=out[:half])
        if m % 2:
            out[half] = x[m - 1]  # the odd one out rides along
        x = out.clone()  # the next level reads this one while writing buf
    return x.item()
