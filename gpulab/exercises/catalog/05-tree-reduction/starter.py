"""Exercise: a tree reduction. Sum n values in log2(n) levels of pairwise additions."""

from __future__ import annotations

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    """Return the sum of all values of the float32 tensor x (any device) as a 0-dim tensor.

    Do it as a tree: while more than one value is left, add pairs of values, halving the count
    at every level. Do not call torch.sum (the grader times it beside yours anyway), and do not
    change x.
    """
    # TODO: loop while x has more than one element: add one half onto the other. Mind odd
    #       lengths: one value has no partner and must not be lost.
    raise NotImplementedError("tree_sum: TODO")
