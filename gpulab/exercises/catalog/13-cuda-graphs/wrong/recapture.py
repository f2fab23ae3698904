# expect: capture once in make_graphed
"""Wrong: captures a new graph on every call; right outputs, but a capture costs more than the
eager step it was meant to replace."""

from __future__ import annotations

import torch


def make_graphed(step, example: torch.Tensor):
    def run(x: torch.Tensor) -> torch.Tensor:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step(x)
        graph.replay()
        return out

    return run
