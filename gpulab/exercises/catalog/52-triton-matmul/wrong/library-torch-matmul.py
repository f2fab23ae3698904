# expect: torch.matmul does the work in one library call
"""torch.matmul in the wrapper: cuBLAS does the work."""

import torch


def matmul(a, b, out):
    out.copy_(torch.matmul(a, b).float())
