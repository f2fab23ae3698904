# expect: handed memory outside the device | on the host | mapped
# family: escape
"""Shortcut (work done on the host, out of the trace's sight): a kernel of mine copies the input
into pinned host memory mapped into the GPU's address space (zero-copy: no memcpy for the
profiler to record), NumPy does the counting on the host, and a kernel of mine copies the answer
back into the output. Every kernel that runs is mine and it was handed the input, so the kernel
trace and OWN_KERNEL see nothing wrong. On the emulator a host array stands in
for the mapped memory (a kernel there may be handed any NumPy array)."""

import importlib

import cupy as cp
import numpy as np

# past the source scan (which refuses the module by name): what rejects this file is the
# rule on memory outside the device, read from what the kernel was handed
_ct = importlib.import_module("ctypes")

SOURCE = r"""
extern "C" __global__ void ferry(const unsigned char* src, unsigned char* dst, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) dst[i] = src[i];
}
"""
_ferry = cp.RawKernel(SOURCE, "ferry")
_buffers = {}  # (slot, bytes) -> (what a kernel is handed, the host's view): reused, not a memo


def _mapped(slot, n, dtype):
    """n elements of host memory a kernel reaches without a copy (cudaHostAllocMapped), as
    (the device's view, the host's view); on the emulator a host array is both."""
    dtype = np.dtype(dtype)
    key = (slot, n, dtype.str)
    if key not in _buffers:
        runtime = getattr(cp.cuda, "runtime", None)
        if runtime is None:
            h = np.empty(n, dtype)
            _buffers[key] = (h, h)
        else:
            nbytes = max(1, n) * dtype.itemsize
            ptr = runtime.hostAlloc(nbytes, 2)  # cudaHostAllocMapped
            get = getattr(runtime, "hostGetDevicePointer", None)
            dptr = get(ptr, 0) if get is not None else ptr  # the same address under UVA
            mem = cp.cuda.UnownedMemory(dptr, nbytes, None, cp.cuda.Device().id)
            dev = cp.ndarray((n,), dtype, cp.cuda.MemoryPointer(mem, 0))
            raw = (_ct.c_ubyte * nbytes).from_address(ptr)
            host = np.frombuffer(raw, dtype=dtype, count=n)
            _buffers[key] = (dev, host)
    return _buffers[key]


def _move(src, dst):
    """My kernel copies the bytes of src to dst (either may be host-mapped)."""
    nbytes = src.size * src.dtype.itemsize
    _ferry((max(1, min(1024, (nbytes + 255) // 256)),), (256,), (src, dst, np.int64(nbytes)))
    cp.cuda.get_current_stream().synchronize()


def to_host(x, slot):
    """x (a device array) as a host array, moved by my kernel."""
    dev, host = _mapped(slot, x.size, x.dtype)
    _move(x.reshape(-1), dev)
    return host.reshape(x.shape)


def to_device(host_values, out, slot):
    """host_values written into out (a device array) by my kernel."""
    dev, host = _mapped(slot, out.size, out.dtype)
    host[...] = np.asarray(host_values, out.dtype).reshape(-1)
    _move(dev, out.reshape(-1))


def histogram(x, hist):
    to_device(np.bincount(to_host(x, "x"), minlength=256), hist, "hist")
