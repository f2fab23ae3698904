# why: lets torch.utils.benchmark do the warm-up, the synchronizing and the statistics
"""torch.utils.benchmark.Timer: warm-up, a synchronizing clock, per-call times."""

from __future__ import annotations

import torch
import torch.utils.benchmark as benchmark


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> float:
    timer = benchmark.Timer(
        stmt="a @ b", globals={"a": a, "b": b}, num_threads=torch.get_num_threads()
    )
    return timer.blocked_autorange(min_run_time=0.05).median  # seconds per call
