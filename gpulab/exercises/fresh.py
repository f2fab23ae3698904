"""Fresh data before every timed call: every element of every input changes, on the device.

A timed figure must be of work done. Changing one element before a call caught code that
returned an answer kept by buffer address, but not a memo keyed on the content (a checksum, the
rows that changed): it returned the kept answer, or recomputed one row, and the timed figure
was of work not done. An affine rewrite (x -> -x + d) is not enough either: the sum of -x + d
follows from the kept sum, so a memo of a linear answer could be updated instead of recomputed.

So before every timed call each input is rewritten whole, in place (the same buffers: a memo
keyed on the address gains nothing), element by element with factors no learner can predict:

- floats: x[i] *= f[(i + r) mod n], f drawn once per check in [0.95, 1.0526) (symmetric in
  log, so magnitudes wander little over a check's calls and the signs and the mean stay), r a
  new offset every call: every element changes by its own factor, and no kept answer, whole or
  in parts, can be scaled into the new one;
- integers: x[i] ^= m[(i + r) mod n], m drawn once per check in [1, 2^k), where 2^k is above the
  largest magnitude the array had: values stay within the range the check drew them from (a
  histogram's bins stay bins);
- floats that are all whole numbers (a check that wants exact sums draws them so): x[i] moves
  by m[(i + r) mod n] in [1, span) around the range [lo, hi] they were drawn from, so they stay
  whole numbers in that range and every sum stays exact.

The draws come from the OS's entropy. A rewrite costs two passes over the input, untimed. Works
on NumPy and CuPy arrays and on torch tensors alike (the kernel, Triton and PyTorch tracks).
"""

from __future__ import annotations

import importlib
import os
import random
from typing import Any

import numpy as np

# Draws from the OS's entropy, bound at import: a learner's code can rebind `random`, not this
_rng = random.Random(os.urandom(16))
LOW, HIGH = 0.95, 1 / 0.95


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _is_float(x: Any) -> bool:
    return bool(x.is_floating_point()) if _is_torch(x) else np.dtype(x.dtype).kind == "f"


def _is_int(x: Any) -> bool:
    if _is_torch(x):
        return not x.is_floating_point() and not x.is_complex() and str(x.dtype) != "torch.bool"
    return np.dtype(x.dtype).kind in "iu"


def _flat(x: Any) -> Any:
    return x.view(-1) if _is_torch(x) else x.reshape(-1)


class Refresher:
    """Rewrites inputs whole before each timed call (see the module doc): its factors and masks
    are drawn once, for the largest input of each kind, on the input's own device."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str, int, str], Any] = {}
        self._bits: dict[int, int] = {}
        self._wholes: dict[int, tuple[float, int] | None] = {}

    def __call__(self, *arrays: Any) -> None:
        """Change every element of each array (or tensor) in `arrays`, in place."""
        for x in arrays:
            n = int(x.numel()) if _is_torch(x) else int(getattr(x, "size", 0))
            if n < 2:
                continue
            whole = self._whole(x) if _is_float(x) else None
            if whole is not None:
                lo, span = whole
                self._wrap(x, n, self._table(x, n, "w", span), lo, span)
            elif _is_float(x):
                self._apply(x, n, self._table(x, n, "f"), "mul")
            elif _is_int(x):
                self._apply(x, n, self._table(x, n, "i"), "xor")

    def _whole(self, x: Any) -> tuple[float, int] | None:
        """(lo, span) when every value of float array x is a whole number in a small range
        [lo, lo + span), read once per array; else None."""
        if id(x) not in self._wholes:
            lo, hi = (float(x.min()), float(x.max()))
            whole = bool((x == x.round()).all())
            span = int(hi - lo) + 1
            self._wholes[id(x)] = (lo, span) if whole and 1 < span <= 1 << 16 else None
        return self._wholes[id(x)]

    def _wrap(self, x: Any, n: int, table: Any, lo: float, span: int) -> None:
        flat = _flat(x)
        r = _rng.randrange(n)
        for part, shift in ((flat[: n - r], table[r:n]), (flat[n - r :], table[:r])):
            shift = shift.to(x.dtype) if _is_torch(x) else shift.astype(x.dtype, copy=False)
            part += shift - lo
            if _is_torch(x):
                part.remainder_(span)
            else:
                part %= span
            part += lo

    def _table(self, x: Any, n: int, kind: str, span: int = 0) -> Any:
        if kind == "i" and id(x) not in self._bits:
            top = int(x.abs().max()) if _is_torch(x) else int(abs(x).max())
            self._bits[id(x)] = max(1, top.bit_length())
        bits = self._bits.get(id(x), 0) if kind == "i" else span
        key = (type(x).__module__.split(".")[0], str(getattr(x, "device", "")), bits, kind)
        table = self._tables.get(key)
        if table is None or _len(table) < n:
            table = _draw(x, n, kind, bits)
            self._tables[key] = table
        return table

    def _apply(self, x: Any, n: int, table: Any, op: str) -> None:
        flat = _flat(x)
        r = _rng.randrange(n)
        head, tail = table[r:n], table[:r]
        if _is_torch(x):
            if op == "mul":
                roll_mul(flat, table, r)
            else:
                flat[: n - r].bitwise_xor_(head.to(x.dtype))
                flat[n - r :].bitwise_xor_(tail.to(x.dtype))
            return
        if op == "mul":
            flat[: n - r] *= head.astype(x.dtype, copy=False)
            flat[n - r :] *= tail.astype(x.dtype, copy=False)
        else:
            flat[: n - r] ^= head.astype(x.dtype, copy=False)
            flat[n - r :] ^= tail.astype(x.dtype, copy=False)


def _len(table: Any) -> int:
    return int(table.numel()) if _is_torch(table) else int(table.size)


def seed() -> int:
    """A seed from the OS's entropy (the factors of processes that must agree on them)."""
    return _rng.getrandbits(63)


def offset(n: int) -> int:
    """Where a rewrite starts in its table this time: 0 <= offset < n, from the OS's entropy."""
    return _rng.randrange(n)


def torch_factors(n: int, seed_: int, device: Any, dtype: Any) -> Any:
    """n factors in [LOW, HIGH) as a torch tensor, the same for the same seed on any process."""
    import torch  # deferred: only torch callers ask, and they have it imported

    gen = torch.Generator(device=device).manual_seed(seed_)
    u = torch.rand(n, generator=gen, device=device, dtype=torch.float64)
    return torch.exp(u * (np.log(HIGH) - np.log(LOW)) + np.log(LOW)).to(dtype)


def roll_mul(flat: Any, table: Any, r: int) -> None:
    """flat[i] *= table[(i + r) mod n], in place, for 1-D torch tensors of n elements."""
    n = int(flat.numel())
    flat[: n - r].mul_(table[r:n].to(flat.dtype))
    flat[n - r :].mul_(table[:r].to(flat.dtype))


def _draw(x: Any, n: int, kind: str, bits: int) -> Any:
    """n factors in [LOW, HIGH) (kind "f"), n masks in [1, 2**bits) ("i") or n whole shifts in
    [1, bits) ("w", bits the span), on x's device."""
    seed_ = seed()
    if _is_torch(x):
        import torch  # deferred: x is a tensor, so torch is imported already

        if kind == "f":
            return torch_factors(n, seed_, x.device, x.dtype)
        gen = torch.Generator(device=x.device).manual_seed(seed_)
        top = bits if kind == "w" else 1 << bits
        return torch.randint(1, top, (n,), generator=gen, device=x.device, dtype=x.dtype)
    if isinstance(x, np.ndarray):
        g = np.random.default_rng(seed_)
        if kind == "f":
            return np.exp(g.uniform(np.log(LOW), np.log(HIGH), n)).astype(x.dtype)
        return g.integers(1, bits if kind == "w" else 1 << bits, n).astype(x.dtype)
    xp = importlib.import_module(type(x).__module__.split(".")[0])  # CuPy: drawn on the device
    g = xp.random.default_rng(seed_)
    if kind == "f":
        return xp.exp(g.uniform(np.log(LOW), np.log(HIGH), n)).astype(x.dtype)
    top = bits if kind == "w" else 1 << bits
    return xp.floor(1 + g.random(n) * (top - 1)).astype(x.dtype)
