"""The CUDA emulator's reach: every shared array a kernel declares is watched (several in one
declaration, one at file scope), and what the kernel's source can touch is only what a GPU
kernel could (no runtime bookkeeping, no host memory, no copy past the checks, no launch past
the trace)."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.emulator import cuda, cupy_module, toolchain

pytestmark = pytest.mark.skipif(toolchain.compiler() is None, reason="no host C++ compiler")

# Two arrays in one declaration, and one at file scope: each a shared array of its own, which a
# neighbour's slot read without a barrier between races on
TWO_IN_ONE = r"""
extern "C" __global__ void k(const float* a, float* out) {
    __shared__ float s[64], r[2][64];
    int t = threadIdx.x;
    s[t] = a[t];
    r[1][t] = a[t] * 2.0f;
    SYNC
    out[t] = s[(t + 1) % 64] + r[1][(t + 1) % 64];
}
"""
FILE_SCOPE = r"""
#define N 64
__shared__ float tile[N];

extern "C" __global__ void k(const float* a, float* out) {
    int t = threadIdx.x;
    tile[t] = a[t];
    SYNC
    out[t] = tile[(t + 1) % N];
}
"""


def _run(source: str, sync: str) -> tuple[np.ndarray, cuda.RawKernel]:
    cp = cupy_module.make()
    a = cp.asarray(np.arange(64, dtype=np.float32))
    out = cp.empty(64, dtype=np.float32)
    kernel = cp.RawKernel(source.replace("SYNC", sync), "k")
    kernel((1,), (64,), (a, out))
    return out, kernel


@pytest.mark.parametrize("source", [TWO_IN_ONE, FILE_SCOPE], ids=["one-declaration", "file-scope"])
def test_every_shared_array_is_counted_and_race_checked(source: str) -> None:
    out, kernel = _run(source, "__syncthreads();")
    want = np.roll(np.arange(64, dtype=np.float32), -1)
    assert np.array_equal(out, want * 3 if source is TWO_IN_ONE else want)
    assert kernel.ran is not None and kernel.ran.shared_touches >= 128
    assert kernel.ran.shared_shares > 0
    with pytest.raises(cuda.EmulatorError, match="shared-memory race on (s|tile)\\[1\\]"):
        _run(source, "")


def test_static_shared_bytes_count_each_declarator_and_file_scope_arrays_used() -> None:
    assert cuda.static_shared_bytes(TWO_IN_ONE, "k") == 64 * 4 + 2 * 64 * 4
    assert cuda.static_shared_bytes(FILE_SCOPE, "k") == 64 * 4
    unused = FILE_SCOPE.replace("tile[t] = a[t];", "").replace("tile[(t + 1) % N]", "a[t]")
    assert cuda.static_shared_bytes(unused, "k") == 0
