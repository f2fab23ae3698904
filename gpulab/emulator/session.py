"""The emulator standing in for CuPy for one block of code: `gpulab ex check` on a machine where
CuPy cannot run wraps one check in `emulating(seed)`.

Inside the block `import cupy` (and `cupyx`) gives the emulator's module, and launches run their
blocks in a shuffled order drawn from the seed (a result that depends on which block's atomic
comes first then differs between seeds, as it does between runs on a GPU). After the block
`sys.modules` holds exactly what it held before for every `cupy` and `cupyx` name: nothing, or a
real CuPy that could not reach a GPU, with all its submodules; so a worker's later jobs never
meet the emulator's module.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

from gpulab.emulator.cuda import shuffled_blocks
from gpulab.emulator.cupy_module import cupyx_modules, make

# The correctness cases' big size on the emulator (api.Context.check_bytes): every thread is a
# function call on one CPU core, so a quarter of a million floats, a few hundred blocks of a
# typical launch, keeps a check near a second while a grid-stride loop still wraps many times
# (the emulator's device has 2 SMs)
CHECK_BYTES = 1 << 20
_PACKAGES = ("cupy", "cupyx")


def _ours(name: str) -> bool:
    return name.split(".")[0] in _PACKAGES


@contextmanager
def emulating(seed: int) -> Iterator[types.ModuleType]:
    """The emulator's `cupy` (and `cupyx` over SciPy) in `sys.modules` for the block, whatever
    was there put back after (see the module doc); yields the module."""
    saved = {name: mod for name, mod in sys.modules.items() if _ours(name)}
    for name in saved:
        del sys.modules[name]
    module = make()
    sys.modules["cupy"] = module
    sys.modules.update(cupyx_modules())
    try:
        with shuffled_blocks(seed):
            yield module
    finally:
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)
