# expect: copy each new x into the static input
"""Wrong: captures the graph on the example and replays it without copying the new input in,
so every call returns step(example)."""

from __future__ import annotations

import torch


def make_graphed(step, example: torch.Tensor):
    static_in = example.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(static_in)

    def run(x: torch.Tensor) -> torch.Tensor:
        graph.replay()
        return static_out

    return run
