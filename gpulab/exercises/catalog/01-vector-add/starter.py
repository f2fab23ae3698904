"""Exercise 1: vector addition. Write a + b into `out`, on the device the tensors are on.

Check it:  gpulab ex check vector-add     (or `gpulab ex watch`, which checks on every save)
"""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """out[i] = a[i] + b[i] for every i. a, b and out have the same length, dtype and device."""
    # TODO: write the sum into `out` (it already exists on the right device). Do not return a
    # new tensor, and do not change a or b.
    raise NotImplementedError("vector_add: write a + b into out")
