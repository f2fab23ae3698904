# why: returns a clone of the static output (safe to keep across calls), one extra small kernel per call
"""Replay, then hand back a copy: the caller may keep every output, and the graph still saves
the other 96 launches."""

from __future__ import annotations

import torch


def make_graphed(step, example: torch.Tensor):
    static_in = torch.empty_like(example)
    static_in.copy_(example)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(static_in)

    def run(x: torch.Tensor) -> torch.Tensor:
        static_in.copy_(x)
        graph.replay()
        return static_out.clone()

    return run
