# why: captures with CUDAGraph.capture_begin / capture_end on its own stream instead of the torch.cuda.graph context manager
"""The steps torch.cuda.graph takes, by hand: a non-default stream, warm-up on it, a capture
bracketed by capture_begin and capture_end, and the caller's stream joined after."""

from __future__ import annotations

import torch


def make_graphed(step, example: torch.Tensor):
    static_in = example.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        step(static_in)  # warm-up
        stream.synchronize()
        graph.capture_begin()
        static_out = step(static_in)
        graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)

    def run(x: torch.Tensor) -> torch.Tensor:
        static_in.copy_(x, non_blocking=True)
        graph.replay()
        return static_out

    return run
