"""Turn an exception raised by an experiment into a failure kind and one-line message."""

from __future__ import annotations

import re
from typing import Any

from gpulab.core import events as ev

_SIZE = r"([\d.]+)\s*([KMGT]i?B)"
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_UNITS.update({"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12})


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS.get(unit, 1))


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    if name in ("OutOfMemoryError", "CUDARuntimeError") and "memory" in str(exc).lower():
        return name == "OutOfMemoryError" or "out of memory" in str(exc).lower()
    return "out of memory" in str(exc).lower() and "CUDA" in str(exc)


def classify(exc: BaseException) -> tuple[str, str, dict[str, Any]]:
    """(kind, message, extra fields) for a `failed` event."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    kind_attr = getattr(exc, "kind", None)
    if isinstance(kind_attr, str) and kind_attr:
        return kind_attr, first, dict(getattr(exc, "extra", {}) or {})
    if _is_oom(exc):
        extra: dict[str, Any] = {}
        m = re.search(r"Tried to allocate " + _SIZE, text)
        if m:
            extra["requested_bytes"] = _bytes(*m.groups())
        m = re.search(r"of which " + _SIZE + " is free", text)
        if m:
            extra["free_bytes"] = _bytes(*m.groups())
        m = re.search(r"allocating ([\d,]+) bytes", text)  # CuPy's wording
        if m and "requested_bytes" not in extra:
            extra["requested_bytes"] = int(m.group(1).replace(",", ""))
        for key in ("requested_bytes", "free_bytes"):
            if hasattr(exc, key):
                extra[key] = int(getattr(exc, key))
        msg = "out of memory"
        if "requested_bytes" in extra:
            msg += f": asked for {extra['requested_bytes'] / 2**30:.2f} GiB"
            if "free_bytes" in extra:
                msg += f" with {extra['free_bytes'] / 2**30:.2f} GiB free"
        return ev.KIND_OOM, msg, extra
    low = text.lower()
    if "illegal memory access" in low or "illegal address" in low:
        return ev.KIND_ILLEGAL_ADDRESS, f"illegal memory access on the GPU: {first}", {}
    if "expected all tensors to be on the same device" in low:
        return ev.KIND_DEVICE_MISMATCH, first, {}
    return ev.KIND_EXCEPTION, f"{type(exc).__name__}: {first}", {}
