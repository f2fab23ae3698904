"""Fresh data before every timed call: every element of every input changes, on the device.

A timed figure must be of work done. Changing one element before a call caught code that
returned an answer kept by buffer address, but not a memo keyed on the content (a checksum, the
rows that changed): it returned the kept answer, or recomputed one row, and the timed figure
was of work not done. So before every timed call each input is rewritten whole, in place (the
same buffers: a memo keyed on the address gains nothing either), by an operation as cheap as
one pass over it, untimed, with a draw no learner can predict:

- floats: x -> -x + d, d drawn in [-0.25, 0.25): every element changes (even 0), the range
  stays (within 0.5 of the first draw's) and two calls never see the same values;
- integers: x -> x ^ r, r drawn in [1, 2^k) where 2^k is above the largest magnitude the array
  had: every element changes and stays within the range the check drew it from (a histogram's
  bins stay bins).

Works on NumPy and CuPy arrays and on torch tensors alike (the kernel, Triton and PyTorch
tracks). Every timed output is then checked against the library's answer on the same inputs.
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np

# Draws from the OS's entropy, bound at import: a learner's code can rebind `random`, not this
_rng = random.Random(os.urandom(16))
SHIFT = 0.25


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _kind(x: Any) -> str:
    if _is_torch(x):
        return "f" if x.is_floating_point() else ("b" if str(x.dtype) == "torch.bool" else "i")
    return np.dtype(x.dtype).kind


class Refresher:
    """Rewrites inputs whole before each timed call (see the module doc). Keeps, per array, the
    power of two above its largest magnitude, read once: an integer array's range."""

    def __init__(self) -> None:
        self._bits: dict[int, int] = {}

    def __call__(self, *arrays: Any) -> None:
        """Change every element of each array (or tensor) in `arrays`, in place."""
        for x in arrays:
            if getattr(x, "size", None) == 0 or not hasattr(x, "dtype"):
                continue
            kind = _kind(x)
            if kind == "f":
                self._float(x)
            elif kind in "iu":
                self._int(x)

    def _float(self, x: Any) -> None:
        d = _rng.uniform(-SHIFT, SHIFT)
        if _is_torch(x):
            x.neg_().add_(d)
        else:
            x *= -1
            x += x.dtype.type(d)

    def _int(self, x: Any) -> None:
        key = id(x)
        if key not in self._bits:
            top = int(abs(x).max()) if not _is_torch(x) else int(x.abs().max())
            self._bits[key] = max(1, top.bit_length())
        r = _rng.randrange(1, 1 << self._bits[key])
        if _is_torch(x):
            x.bitwise_xor_(r)
        else:
            x ^= x.dtype.type(r)
