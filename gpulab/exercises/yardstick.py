"""The yardstick a grade is measured against: our own solution, timed on this GPU, now.

A fraction of a calibrated ceiling is not portable: the same expert kernel reached 0.96 of the
copy ceiling on an H100 and 0.62 on an H200 (a reduction's tail, the L2's size and the clocks
differ), so thresholds tuned on one card reject correct work on another. So each timed check
also times a yardstick in the same rounds as the learner's code (gpulab.core.rounds): the
exercise's `expert.py` where it has one (the kernel and Triton tracks), else its `solution.py`
(the reference). The grade is the learner's speed as a fraction of the yardstick's, measured in
the same check on the same GPU; `grades:` in exercise.md are fractions of it, gold at least
EXPERT_GOLD.

The yardstick's best figure on this device is also kept (a record per device key, per exercise,
per version of the code: the yardstick's file and check.py, and the versions of torch, CuPy and
Triton that ran it), for two uses: the front ends show what gold is on this GPU before the first
check, and a GPU check whose yardstick ran far below its record (something slowed it: the
learner's code left work running beside it, or the GPU throttled) grades against the record
instead, and says so (a CPU check grades by its paired rounds: see speed._grade_by_yardstick). Only the best figure is kept, so nothing a check does can lower the bar.

The record reads JSON only (no torch, no CuPy): the UI process may read it.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.core.peaks import device_key
from gpulab.exercises.device_records import DeviceRecords
from gpulab.exercises.loader import Exercise

SCHEMA = 1
# A yardstick timed in a check below this share of its record on this device was slowed by
# something (see the module doc): the check grades against the record.
SLOWED = 0.8
_LIBRARIES = ("torch", "cupy", "triton")


@dataclass(frozen=True)
class Choice:
    """Which file is the yardstick, and what a person calls it."""

    label: str  # "expert" or "reference"
    path: Path

    @property
    def words(self) -> str:
        """'our expert solution' or 'our reference solution'."""
        return f"our {self.label} solution"


def choose(ex: Exercise) -> Choice:
    """The expert solution where the exercise has one, else the reference."""
    if ex.has_expert:
        return Choice("expert", ex.expert_path)
    return Choice("reference", ex.solution_path)


def fingerprint(ex: Exercise, choice: Choice) -> str:
    """What a record is valid for: the yardstick's file and the check that times it."""
    h = hashlib.sha256()
    for path in (choice.path, ex.check_path):
        with contextlib.suppress(OSError):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def versions() -> dict[str, str]:
    """The versions of the libraries loaded in this process that a yardstick's speed depends on
    (read from the modules already imported: nothing is imported for it)."""
    out = {}
    for name in _LIBRARIES:
        mod = sys.modules.get(name)
        version = getattr(mod, "__version__", None)
        if version:
            out[name] = str(version)
    return out


_RECORDS = DeviceRecords("yardsticks", SCHEMA)


def key_for(inventory: Any, device_index: int = 0, *, cpu: bool = False) -> str:
    """The device's record key (the calibration's: a GPU's UUID and driver, or the host)."""
    return device_key(inventory, device_index, cpu=cpu)


def last(ex_id: str, key: str) -> dict[str, Any] | None:
    """The record of exercise `ex_id` on device `key` as kept, whatever code made it (for
    display: 'gold on this GPU is from ...'); None before any check timed it here."""
    row = _RECORDS.read(key).get(ex_id)
    return row if isinstance(row, dict) else None


def record(ex: Exercise, choice: Choice, key: str) -> dict[str, Any] | None:
    """The record a check may trust: same yardstick file, same check, same library versions."""
    row = last(ex.id, key)
    if not row or row.get("fingerprint") != fingerprint(ex, choice):
        return None
    if row.get("versions") != versions():
        return None
    return row


def observe(
    ex: Exercise,
    choice: Choice,
    key: str,
    *,
    value: float,
    fraction: float | None,
    metric: str,
    ceiling: str,
) -> dict[str, Any]:
    """Keep the yardstick's figure from a check if it beats the record (or the record is for
    other code); returns the record now kept."""
    rows = _RECORDS.read(key)
    stamp = {"fingerprint": fingerprint(ex, choice), "versions": versions()}
    old = rows.get(ex.id)
    kept: dict[str, Any] = old if isinstance(old, dict) else {}
    fresh = not kept or any(kept.get(k) != v for k, v in stamp.items())
    seen = 1 if fresh else int(kept.get("seen", 0)) + 1
    if fresh or value > float(kept.get("value") or 0.0):
        row = {
            **stamp,
            "label": choice.label,
            "value": value,
            "fraction": fraction,
            "metric": metric,
            "ceiling": ceiling,
            "seen": seen,
            "updated": time.time(),
        }
    else:
        row = {**kept, "seen": seen}
    rows[ex.id] = row
    _RECORDS.write(key, rows)
    return row


def words(ex: Exercise, key: str) -> str:
    """What the yardstick reached on this device, for a person: 'our expert solution reached
    2,751 GB/s on this device (92% of its copy ceiling); gold is from 2,338 GB/s', or why there
    is no figure yet."""
    choice = choose(ex)
    row = last(ex.id, key)
    if not row or not row.get("value"):
        return (
            f"{choice.words} is timed beside yours in every check; gold is "
            f"{100 * ex.grades.get('gold', 0):.0f}% of its speed on this device"
        )
    unit = str(row.get("metric") or "")
    value = float(row["value"])
    frac = row.get("fraction")
    share = f" ({100 * float(frac):.0f}% of its {row.get('ceiling')} ceiling)" if frac else ""
    gold = ex.grades.get("gold")
    tail = f"; gold is from {gold * value:,.4g} {unit}" if gold else ""
    return f"{choice.words} reached {value:,.4g} {unit} on this device{share}{tail}"


_LOADED: dict[tuple[str, str], Any] = {}


def reference_entry(ex: Exercise) -> Any:
    """Our reference solution's ENTRY function, loaded once per process for each version of the
    file (what it compiles, torch.compile's graphs above all, then lasts as long as the worker)."""
    path = ex.solution_path
    text = path.read_bytes()
    key = (str(path), hashlib.sha256(text).hexdigest())
    if key not in _LOADED:
        from gpulab.exercises.sandbox import load_learner  # deferred: the UI reads records only

        _, fn = load_learner(path, f"{ex.id}-reference", ex.entry)
        _LOADED[key] = fn
    return _LOADED[key]
