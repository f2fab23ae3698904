"""Long CPU work a block at a time, so a cancel is taken between blocks.

An experiment's CPU path that ran as one call (making 10^8 random numbers, adding two 400 MB
vectors) could not be cancelled until the call returned: the runner then killed the worker.
These helpers split such work into blocks with `Context.blocks`, which checks for a cancel
before each one. Nothing here imports torch or NumPy at module level.
"""

from __future__ import annotations

from typing import Any

from gpulab.experiments.base import Context

# Long CPU work goes a block at a time with a cancel check between blocks (Context.blocks).
# Timed streaming work (an add, an eager chain) in blocks of 16M elements: large enough that the
# per-block call costs under 1% on a fast many-core CPU and that an eager chain's temporaries
# (64 MiB each) stay out of cache, as they do in one call; 10-20 ms for an add on 2 slow cores.
# Work that costs more per element (random numbers, the first write of fresh memory, float64
# checks) 2M at a time: 5-40 ms on the same cores.
CPU_BLOCK = 1 << 24
SMALL_BLOCK = 1 << 21


def on_host(x: Any) -> bool:
    """Whether x (NumPy, torch or CuPy) lives in host memory."""
    device = getattr(x, "device", None)
    if device is None:
        return not type(x).__module__.startswith("cupy")
    return str(device) == "cpu"


def host_random(ctx: Context, n: int, rng: Any) -> Any:
    """n uniform float32 values from the NumPy Generator `rng`, made a block at a time."""
    import numpy as np

    out = np.empty(n, dtype=np.float32)
    for s in ctx.blocks(n, SMALL_BLOCK):
        rng.random(out=out[s], dtype=np.float32)
    return out


def torch_random(ctx: Context, shape: int | tuple[int, ...], dtype: Any = None, normal=False):
    """torch.rand (or randn) on the CPU, a block at a time: torch.rand is torch.empty and then
    uniform_, here split into blocks with a cancel check between them."""
    import torch

    out = torch.empty(shape, dtype=dtype or torch.float32)
    flat = out.view(-1)
    for s in ctx.blocks(flat.numel(), SMALL_BLOCK):
        if normal:
            flat[s].normal_()
        else:
            flat[s].uniform_()
    return out


def blockwise(ctx: Context, n: int, op: Any, step: int = CPU_BLOCK) -> Any:
    """A callable running op(slice) over range(n) a block at a time (a cancel check between
    blocks), returning what the blocks returned, in order."""

    def run() -> list[Any]:
        return [op(s) for s in ctx.blocks(n, step)]

    return run


def joined(parts: Any) -> Any:
    """The blocks a `blockwise` call returned, as one array (NumPy or torch)."""
    if not isinstance(parts, list):
        return parts
    if len(parts) == 1:
        return parts[0]
    if hasattr(parts[0], "detach"):
        import torch

        return torch.cat(parts)
    import numpy as np

    return np.concatenate(parts)


# A CPU matmul larger than this many flops (size 1625 and up) runs a block of rows at a time.
# Below it (every default size) it is one call; above it, blocks of at least 512 rows, where a
# block costs within a few percent of the whole product's rate (measured on 2 cores: 256-row
# blocks of a 1024 product cost 2-12% per dtype, 64-row blocks 20-36%).
MATMUL_BLOCK_FLOPS = 2**33
MATMUL_MIN_ROWS = 512


def matmul_rows(size: int) -> int:
    """Rows per block of a size x size x size product on the CPU (size: one call)."""
    rows = MATMUL_BLOCK_FLOPS // (2 * size * size)
    return size if rows >= size else max(MATMUL_MIN_ROWS, rows)
