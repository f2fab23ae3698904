"""On a GPU: does own_work.host_memory tell pinned host memory mapped into the device's address
space from device memory? (The host-memory rule's GPU path: cudaPointerGetAttributes.)"""

import cupy as cp
import numpy as np

from gpulab.exercises.own_work import host_memory

n = 1024
dev = cp.zeros(n, dtype=cp.float32)
ptr = cp.cuda.runtime.hostAlloc(4 * n, 2)  # cudaHostAllocMapped
dptr = ptr  # unified addressing (every 64-bit CUDA system): the host address is the device's
mem = cp.cuda.UnownedMemory(dptr, 4 * n, None, cp.cuda.Device().id)
mapped = cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(mem, 0))
managed = cp.cuda.malloc_managed(4 * n)
print("device array:", repr(host_memory([dev, np.int32(n)])))
print("mapped array:", repr(host_memory([mapped])))
print("mapped pointer as an integer:", repr(host_memory([np.uint64(dptr)])))
print("managed pointer as an integer:", repr(host_memory([np.uint64(managed.ptr)])))
pinned = cp.cuda.alloc_pinned_memory(4 * n)  # what a learner reaches for first
print("small ints:", repr(host_memory([np.int64(5), 7])))
print("pinned pointer as an integer:", repr(host_memory([np.uint64(pinned.ptr)])))
