"""Monte Carlo pi's counters: how many of `samples` random points land inside the quarter circle.

- NumPy and torch (CPU, or a GPU for the convergence series): the textbook recipe in chunks of
  CPU_CHUNK (GPU_CHUNK on a GPU), a cancel taken between chunks;
- the fused CuPy kernel (kernels/montecarlo.cu, `FusedKernel`): SplitMix64 on a per-sample
  counter, and `splitmix_count_numpy`, its bit-for-bit twin on the CPU that the GPU test checks
  the kernel against.
Kept apart from the experiment (montecarlo.py), which times them, judges the estimates in
standard errors and draws the convergence series; the torch GPU contender is montecarlo_torch.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

# 2M points: 16 MiB of fp32 coordinates, cache-friendlier than larger; a chunk takes 10-50 ms
# on a slow CPU, and a cancel is taken between chunks.
CPU_CHUNK = 1 << 21
GPU_CHUNK = 1 << 26  # 64M points: 256 MiB per array, launches stay a few percent of the time
KERNEL_PATH = Path(__file__).with_name("kernels") / "montecarlo.cu"
GAMMA = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """SplitMix64's finaliser on a Python int (seeds; the reference for the kernel's RNG)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def kernel_seed(seed: int) -> int:
    """Adjacent user seeds become unrelated stream offsets."""
    return mix64(seed ^ 0x5DEECE66D)


def splitmix_count_numpy(samples: int, seed: int) -> int:
    """The fused kernel's exact count, computed with NumPy: bit-for-bit the same points."""
    import numpy as np

    base = np.uint64(kernel_seed(seed))
    inside = 0
    with np.errstate(over="ignore"):
        for start in range(0, samples, CPU_CHUNK):
            i = np.arange(start + 1, min(samples, start + CPU_CHUNK) + 1, dtype=np.uint64)
            z = base + i * np.uint64(GAMMA)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            xs = ((z >> np.uint64(32)).astype(np.uint32) >> np.uint32(9)) | np.uint32(0x3F800000)
            ys = (z.astype(np.uint32) >> np.uint32(9)) | np.uint32(0x3F800000)
            c = np.float32(0.99999994)
            x = xs.view(np.float32) - c
            y = ys.view(np.float32) - c
            # fmaf(x, x, y*y): one rounding of x*x + (y*y rounded); float64 for x*x is exact.
            s = (x.astype(np.float64) * x + (y * y).astype(np.float64)).astype(np.float32)
            inside += int(np.count_nonzero(s <= np.float32(1.0)))
    return inside


def _nothing() -> None:
    pass


def _numpy_count(samples: int, seed: int, check: Callable[[], None] = _nothing) -> int:
    import numpy as np

    rng = np.random.default_rng(seed)
    inside = 0
    left = samples
    while left > 0:
        check()
        n = min(left, CPU_CHUNK)
        x = rng.random(n, dtype=np.float32)
        y = rng.random(n, dtype=np.float32)
        inside += int(np.count_nonzero(x * x + y * y <= 1.0))
        left -= n
    return inside


def _torch_count(samples: int, seed: int, device: str, check: Callable[[], None] = _nothing) -> int:
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    inside = torch.zeros((), dtype=torch.int64, device=device)
    chunk = CPU_CHUNK if device == "cpu" else GPU_CHUNK
    left = samples
    while left > 0:
        check()  # on the GPU too: it costs nothing beside a launch
        n = min(left, chunk)
        # The tutorials' recipe: two uniform arrays, a compare, a sum.
        x = torch.rand(n, device=device, generator=gen)
        y = torch.rand(n, device=device, generator=gen)
        inside += (x * x + y * y <= 1.0).sum()
        left -= n
    return int(inside.item())


class FusedKernel:
    """The RawKernel, compiled and loaded once per device and process (CuPy caches the binary
    on disk too). A loaded function belongs to one device's context, so the cache is keyed by
    device and filled inside that device's context."""

    _fns: dict[int, Any] = {}

    def __init__(self, device_index: int) -> None:
        import cupy

        self.cupy = cupy
        self.device = cupy.cuda.Device(device_index)
        with self.device:
            fn = FusedKernel._fns.get(device_index)
            if fn is None:
                module = cupy.RawModule(code=KERNEL_PATH.read_text(), options=("-std=c++17",))
                fn = FusedKernel._fns[device_index] = module.get_function("mc_pi")
        self.fn = fn
        attrs = cupy.cuda.runtime.getDeviceProperties(device_index)
        self.sms = int(attrs["multiProcessorCount"])
        self.peak_bytes = 0

    def grid(self, samples: int) -> int:
        """Blocks to launch for `samples`: enough to fill the GPU, capped by the work."""
        regs = max(1, int(getattr(self.fn, "num_regs", 32) or 32))
        per_sm = max(1, min(8, 65536 // (regs * 256)))
        blocks = min(self.sms * per_sm, -(-samples // 256))
        # Keep each thread's count below 2^31 (it is a 32-bit register).
        blocks = max(blocks, -(-samples // (256 * 2**31)))
        return max(1, blocks)

    def count(self, samples: int, seed: int) -> int:
        """Points inside the quarter circle among `samples` made on the GPU from `seed`."""
        cp = self.cupy
        with self.device:
            inside = cp.zeros(1, dtype=cp.uint64)
            self.peak_bytes = max(self.peak_bytes, inside.nbytes)
            self.fn(
                (self.grid(samples),),
                (256,),
                (cp.uint64(samples), cp.uint64(kernel_seed(seed)), inside),
            )
            return int(inside.get()[0])
