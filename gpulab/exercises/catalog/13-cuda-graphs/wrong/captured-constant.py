# expect: same output for all
"""Wrong: the capture reads a tensor made inside it (a copy of the example), so the graph has
its own input that nothing outside can reach; copying x into `static_in` changes nothing."""

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
        frozen = torch.full_like(static_in, 0.0) + example  # captured values, not static_in
        static_out = step(frozen)

    def run(x: torch.Tensor) -> torch.Tensor:
        static_in.copy_(x)
        graph.replay()
        return static_out

    return run
