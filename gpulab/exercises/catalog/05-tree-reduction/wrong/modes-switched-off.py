# expect: switches off torch's function and dispatch modes
# family: writes-what-check-reads
"""Cheat: steps outside the check's torch modes for one call and puts them back exactly as they
were, so the refusal never fires and nothing is seen as removed."""

import torch
from torch.utils._python_dispatch import _disable_current_modes


def tree_sum(x):
    with torch._C.DisableTorchFunction(), _disable_current_modes():
        return torch.sum(x)
