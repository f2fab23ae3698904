# expect: copy chunk i+1 on a side stream
"""Wrong: copy, compute, copy, compute on one stream (non_blocking frees the host, not the GPU)."""

from __future__ import annotations

import torch


def overlapped(chunks: list[torch.Tensor], step) -> list[torch.Tensor]:
    return [step(chunk.to("cuda", non_blocking=True)) for chunk in chunks]
