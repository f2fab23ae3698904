# expect: Memcpy HtoD
# family: escape
# emulator-only: the emulator's device arrays are NumPy's, whose flat iterator wrote past the fake's record; on a GPU `out.flat = host` is an upload and a CuPy kernel the trace names
"""Shortcut (work done elsewhere): NumPy adds the row numbers to a read as a NumPy array, the answer is
written back through `out.flat` (and `out.put` does the same), and a kernel of the learner's
that does nothing is launched. Before the fix: pass (on the emulator: NumPy's flat iterator and
`put` wrote the fake's device array without a record). The fake now records a write through
`flat` or `put` as CuPy's kernel and, from host data, the copy to the device ("Memcpy HtoD")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""extern "C" __global__ void nothing(const float* a, float* out) { }""", "nothing"
)


def add_row_index(a, out):
    host = a.view(np.ndarray)  # the fake's device memory read as NumPy's (a documented limit)
    out.flat = (host + np.arange(a.shape[0], dtype=np.float32)[:, None]).ravel()
    _k((1,), (32,), (a, out))
