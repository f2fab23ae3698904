"""A reading is a value or an `NA` that says why it is missing; never a blank.

Telemetry fields hold either a plain value (int, float, str, list) or an `NA`. Formatting helpers
turn both into text, so a pane cannot forget to explain a missing number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class NA:
    """A value NVML (or the worker) could not give, and the reason in a few words."""

    reason: str

    def __str__(self) -> str:
        return f"N/A ({self.reason})"

    def to_dict(self) -> dict[str, str]:
        """The missing value as JSON-ready data: {'na': reason}."""
        return {"na": self.reason}


def is_na(value: object) -> bool:
    """True when `value` is NA."""
    return isinstance(value, NA)


def fmt(value: Any, render: Callable[[Any], str] = str, *, short: bool = False) -> str:
    """Text for a field: rendered when present, `N/A (reason)` (or just `N/A`) when not."""
    if isinstance(value, NA):
        return "N/A" if short else str(value)
    return render(value)


def jsonable(value: Any) -> Any:
    """Dataclass-free JSON form: NA becomes {"na": reason}; containers recurse."""
    if isinstance(value, NA):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


def gib(n: int | float) -> str:
    """Bytes as GiB to one decimal."""
    return f"{n / 2**30:.1f} GiB"


def card_memory(total: int | float, cuda_total: Any = None) -> str:
    """The card's memory, one figure wherever gpulab shows it: NVML's total (what nvidia-smi
    shows) in GiB to one decimal. With `cuda_total` (what CUDA reports, e.g. torch's
    `total_memory`) smaller, the difference is named: the driver's reserve, which CUDA never
    hands out (an H100 80GB: 79.6 GiB on the card, 79.2 GiB for CUDA)."""
    text = gib(total)
    if isinstance(cuda_total, int | float) and 0 < cuda_total < total:
        text += (
            f" (CUDA gets {gib(cuda_total)}: {nbytes(total - cuda_total)} is the driver's reserve)"
        )
    return text


def mib(n: int | float) -> str:
    """Bytes as MiB."""
    return f"{n / 2**20:.0f} MiB"


def nbytes(n: int | float) -> str:
    """Bytes in the unit a person reads fastest (MiB below 1 GiB)."""
    return gib(n) if abs(n) >= 2**30 else mib(n)
