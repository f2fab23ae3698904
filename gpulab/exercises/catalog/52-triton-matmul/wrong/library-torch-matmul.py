# expect: is not among the operations this exercise allows
# family: library
"""torch.matmul in the wrapper: cuBLAS does the work."""

import torch


def matmul(a, b, out):
    out.copy_(torch.matmul(a, b).float())
