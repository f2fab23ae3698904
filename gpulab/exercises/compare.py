"""The element scan behind `api.compare_arrays`: how many elements are wrong and the first one.

A check compares tens of millions of elements (the big case, three runs of a racy kernel, the
timed calls' output), and whole-array NumPy expressions make a float64 temporary of the whole
array for every step: on a GPU box's host that scan was most of a repeat check's second. This
one walks both arrays in C order, a quarter of a million elements at a time, so its temporaries
stay in cache; the answer is the same element for element. The functions are bound at import,
before any learner's module, so a learner who patches NumPy changes nothing here.
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 18  # elements per step: a few 2 MiB float64 temporaries, in L2 on most CPUs

_ascontiguous = np.ascontiguousarray
_abs = np.abs
_subtract = np.subtract
_multiply = np.multiply
_add = np.add
_less_equal = np.less_equal
_not_equal = np.not_equal
_isfinite = np.isfinite
_logical_not = np.logical_not
_logical_and = np.logical_and
_logical_or = np.logical_or
_count = np.count_nonzero
_argmax = np.argmax
_empty = np.empty
_f64 = np.float64


def flat(x: np.ndarray) -> np.ndarray:
    """A 1-D C-order view (or copy, for a strided array such as a transpose)."""
    return _ascontiguous(x).reshape(-1)


def scan(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[int, int]:
    """(how many elements are wrong, the first wrong flat index or -1), in C order.

    Integers and booleans compare exactly. Against a finite reference a float is wrong where
    |got - want| > atol + rtol * |want| (a NaN or an infinity is never within); against an
    infinite or NaN reference it is right only when equal (an infinity matched by the same
    infinity; NaN never)."""
    g, w = flat(got), flat(want)
    exact = got.dtype.kind in "iub"
    n = g.size
    size = min(n, CHUNK)
    bad, tmp = _empty(size, bool), _empty(size, bool)
    if not exact:
        err, tol = _empty(size, _f64), _empty(size, _f64)
    wrong, first = 0, -1
    for start in range(0, n, CHUNK):
        gc, wc = g[start : start + CHUNK], w[start : start + CHUNK]
        k = gc.size
        if exact:
            _not_equal(gc, wc, out=bad[:k])
        else:
            e, t, b, m = err[:k], tol[:k], bad[:k], tmp[:k]
            _subtract(gc, wc, out=e, dtype=_f64)
            _abs(e, out=e)
            _abs(wc, out=t, dtype=_f64)
            _multiply(t, rtol, out=t)
            _add(t, atol, out=t)
            # A finite reference: wrong outside the tolerance (a NaN or an infinity in got is)
            _less_equal(e, t, out=b)
            _logical_not(b, out=b)
            _isfinite(wc, out=m)
            _logical_and(b, m, out=b)
            # An infinite (or NaN) reference: only the same value is right (+inf is not -inf)
            _logical_not(m, out=m)
            _logical_and(m, _not_equal(gc, wc), out=m)
            _logical_or(b, m, out=b)
        found = int(_count(bad[:k]))
        if found:
            if first < 0:
                first = start + int(_argmax(bad[:k]))
            wrong += found
    return wrong, first


def max_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest finite |got - want| (NaN when there is none), in float64."""
    g, w = flat(got), flat(want)
    best = -1.0
    for start in range(0, g.size, CHUNK):
        e = _abs(_subtract(g[start : start + CHUNK], w[start : start + CHUNK], dtype=_f64))
        e = e[_isfinite(e)]
        if e.size:
            best = max(best, float(e.max()))
    return best if best >= 0 else float("nan")
