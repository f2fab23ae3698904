# expect: reads or switches off torch's function and dispatch modes
# family: writes-what-check-reads
"""Shortcut (a library does the work, out of the watch's sight): steps outside the check's torch
modes for the call, so the allowlist never sees torch's addcmul and clamp."""

import torch
from torch.utils._python_dispatch import _disable_current_modes


def affine_clamp(x, scale, bias, lo, hi, out):
    with torch._C.DisableTorchFunction(), _disable_current_modes():
        torch.clamp(torch.addcmul(bias, x, scale), lo, hi, out=out)
