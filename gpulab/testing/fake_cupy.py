"""The emulator's `cupy` module (gpulab.emulator.cupy_module) for one test: `install(monkeypatch)`
puts it, and `cupyx` over SciPy, in `sys.modules` until the test ends."""

from __future__ import annotations

import sys
import types
from typing import Any

from gpulab.emulator.cupy_module import cupyx_modules, make


def install(monkeypatch: Any) -> types.ModuleType:
    """Put a fake `cupy` in sys.modules for one test (pytest's monkeypatch undoes it)."""
    mod = make()
    monkeypatch.setitem(sys.modules, "cupy", mod)
    for name, module in cupyx_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    return mod
