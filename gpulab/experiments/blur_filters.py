"""Blur's filters on the CPU: the kernels' weights, the CPU filter and the error check.

The four kernels (all symmetric, so convolution and correlation agree):
- gaussian: sigma = radius / 2, normalised; box: 1 / (2r+1) per tap. Both separable.
- sharpen: 2 * identity - gaussian (an unsharp mask); edge: identity - box (a high-pass; at radius
  1 it is the 8-neighbour Laplacian over 9). Both run as true 2-D stencils on the GPU.
Borders clamp (scipy mode="nearest", np.pad mode="edge"). The float64 reference is this module's
filter on float64 planes; sharpen and edge go through their identities (2x - gaussian, x - box),
which equal the 2-D stencil in exact arithmetic and cost a separable pass, not (2r+1)^2.
Kept apart from the experiment: the GPU tests, bench/tune_kernels.py and the library contenders
use the same weights and reference without the run around them.
"""

from __future__ import annotations

KERNELS = ("gaussian", "box", "sharpen", "edge")
SEPARABLE = ("gaussian", "box")
SCIPY_MISSING = "SciPy is not installed (pip install scipy): NumPy slices ran instead"
NUMPY_INSTEAD = "SciPy ran instead (this is the fallback when SciPy is missing)"


def weights_1d(kind: str, radius: int):
    """The 1-D float32 taps of a separable kernel (gaussian or box)."""
    import numpy as np

    k = np.arange(-radius, radius + 1, dtype=np.float64)
    if kind == "box":
        w = np.ones_like(k)
    else:
        sigma = radius / 2.0
        w = np.exp(-0.5 * (k / sigma) ** 2)
    return (w / w.sum()).astype(np.float32)


def weights_2d(kind: str, radius: int):
    """The full (2r+1)^2 float32 stencil, for any of the four kernels."""
    import numpy as np

    size = 2 * radius + 1
    if kind in SEPARABLE:
        w = weights_1d(kind, radius).astype(np.float64)
        return np.outer(w, w).astype(np.float32)
    base = weights_1d("gaussian" if kind == "sharpen" else "box", radius).astype(np.float64)
    smooth = np.outer(base, base)
    ident = np.zeros((size, size))
    ident[radius, radius] = 1.0
    out = 2 * ident - smooth if kind == "sharpen" else ident - smooth
    return out.astype(np.float32)


def _sep_numpy(planes, w):
    """Separable correlation with clamped borders in NumPy (when SciPy is missing)."""
    import numpy as np

    r = (len(w) - 1) // 2
    acc_dtype = planes.dtype
    pad = np.pad(planes, ((0, 0), (0, 0), (r, r)), mode="edge")
    tmp = np.zeros_like(planes, dtype=acc_dtype)
    width = planes.shape[2]
    for k, wk in enumerate(w):
        tmp += wk * pad[:, :, k : k + width]
    pad = np.pad(tmp, ((0, 0), (r, r), (0, 0)), mode="edge")
    out = np.zeros_like(planes, dtype=acc_dtype)
    height = planes.shape[1]
    for k, wk in enumerate(w):
        out += wk * pad[:, k : k + height, :]
    return out


def _sep(planes, w, use_scipy: bool):
    if not use_scipy:
        return _sep_numpy(planes, w.astype(planes.dtype))
    from scipy import ndimage

    out = ndimage.correlate1d(planes, w.astype(planes.dtype), axis=2, mode="nearest")
    return ndimage.correlate1d(out, w.astype(planes.dtype), axis=1, mode="nearest")


def cpu_filter(planes, kind: str, radius: int, *, use_scipy: bool = True):
    """The filter on the CPU in planes' dtype (float64 planes give the reference)."""
    if kind in SEPARABLE:
        return _sep(planes, weights_1d(kind, radius), use_scipy)
    base = _sep(planes, weights_1d("gaussian" if kind == "sharpen" else "box", radius), use_scipy)
    return 2 * planes - base if kind == "sharpen" else planes - base


def max_abs_error(out, reference) -> float:
    """max |out - reference| in float64, one plane at a time; inf for any unwritten (NaN) pixel."""
    import numpy as np

    if out.shape != reference.shape:
        return float("inf")
    err = 0.0
    for c in range(out.shape[0]):
        plane = out[c]
        if not np.isfinite(plane).all():
            return float("inf")  # an unwritten (poisoned) pixel
        err = max(err, float(np.max(np.abs(plane.astype(np.float64) - reference[c]))))
    return err


SCIPY_MISSING = "SciPy is not installed (pip install scipy): NumPy slices ran instead"


def have_scipy() -> bool:
    """True when scipy.ndimage imports."""
    try:
        import scipy.ndimage  # noqa: F401
    except ImportError:
        return False
    return True
