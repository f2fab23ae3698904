# expect: the library's all-reduce is not allowed here
# family: library
"""ring all-reduce"""

import torch
import torch.distributed as dist


def ring_all_reduce(t: torch.Tensor) -> None:
    pg = dist.distributed_c10d._get_default_group()
    be = pg._get_backend(t.device)
    be.allreduce([t]).wait()
