# why: two in-place passes (a copied into out, then b added to out) in place of one add with out=
"""Vector add as a copy and an in-place add: out holds a, then a + b; the inputs are untouched."""

import torch


def vector_add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    # each element is rounded once (a + b in float32), so this is bit for bit NumPy's sum
    out.copy_(a)
    out.add_(b)
