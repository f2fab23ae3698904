"""A check's outcome, as the process that asks for it reads it.

The CLI and the TUI submit a check to a worker and read its verdict back; they need the result's
shape, the jobs' names and the reading of a job's final event, and nothing of the grader (NumPy,
the watch, the timer): a repeat `gpulab ex check` from the shell pays for the imports of this
module, not the grader's. The worker's side (gpulab.exercises.run_check) fills the same classes.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from gpulab.core import events as ev
from gpulab.core.params import SEED_MAX
from gpulab.core.results import json_safe

PASS, FAIL = "pass", "fail"
# A check on the CUDA emulator (gpulab.emulator, where CuPy cannot run): what it gives, the line
# its pass ends with, and the device it names
EMULATED = "correctness only, no speed grade"
EMULATED_LABEL = f"emulator: {EMULATED} (your CUDA C ran on the CPU emulator)"
EMULATED_DEVICE = "CUDA emulator (CPU)"
CHECK_JOB = "exercise-check"  # the worker's job that grades a file
PREPARE_JOB = "exercise-prepare"  # the worker's job that warms an exercise's compilations


def new_seed() -> int:
    """A fresh random seed for a check's inputs."""
    return secrets.randbelow(SEED_MAX + 1)


@dataclass
class CaseRow:
    """One case's outcome: passed or not, why, and where the first wrong value was."""

    name: str
    passed: bool | None  # None: not run (an earlier case raised)
    message: str = ""
    index: Any = None
    expected: Any = None
    got: Any = None
    max_error: float | None = None
    wrong: int | None = None
    seconds: float = 0.0


@dataclass
class CheckResult:
    """Everything one check found: verdict, message, cases, timing and grade; what the CLI and
    the UI show."""

    exercise: str
    verdict: str  # "pass" or "fail"
    message: str  # one line: why it failed, or what passed
    seed: int
    path: str
    kind: str = ""  # why a fail: wrong | error | crash | timeout | cancelled
    cases: list[CaseRow] = field(default_factory=list)
    failed_case: str | None = None
    index: Any = None
    expected: Any = None
    got: Any = None
    max_error: float | None = None
    timing: dict[str, Any] | None = None  # see grading.time_and_grade
    grade: str | None = None  # pass, bronze, silver, gold (None when it failed)
    restored: list[str] = field(default_factory=list)  # what the learner had patched
    device: str = ""
    emulated: bool = False  # the CUDA C ran on the CPU emulator: correctness only, no grade
    seconds: float = 0.0
    # Where `seconds` went, in the order the check spends it (see Laps); sums to `seconds`.
    phases: dict[str, float] = field(default_factory=dict)
    # why the worker that ran this check must not run the next one ("" when it may): something
    # of the learner's still runs in it (gpulab.exercises.run_check)
    retire: str = ""

    @property
    def passed(self) -> bool:
        """True when the verdict is a pass."""
        return self.verdict == PASS

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data."""
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        """A CheckResult read back from `to_dict`'s data; unknown keys are ignored."""
        names = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in data.items() if k in names}
        kw["cases"] = [CaseRow(**c) for c in data.get("cases") or []]
        return cls(**kw)


def outcome(final: dict[str, Any], exercise: str, path: str, seed: int) -> CheckResult:
    """The CheckResult a job's final event stands for: the grader's own, or one made from the
    runner's failure (crash, time limit, cancel) in words a learner can act on."""
    kind = final.get("type")
    if kind == ev.RESULT:
        data = ((final.get("result") or {}).get("summary") or {}).get("check")
        if data:
            return CheckResult.from_dict(data)
    extra = final.get("check")
    if kind == ev.FAILED and isinstance(extra, dict):
        return CheckResult.from_dict(extra)
    message = str(final.get("message") or "the check ended without a verdict")
    why = "internal"
    if kind == ev.CANCELLED:
        why = final.get("reason") or "cancelled"
        if why == "timeout":
            message = final.get("message") or message
    elif final.get("kind") == ev.KIND_CRASHED:
        why, message = "crash", f"your code crashed the worker: {message}"
    elif final.get("kind") in (ev.KIND_ILLEGAL_ADDRESS, ev.KIND_OOM):
        why = "crash"
    elif final.get("kind") in (ev.KIND_BAD_PARAMS, ev.KIND_EXPERIMENT):
        why = "unavailable" if "needs" in message else "internal"
    return CheckResult(exercise, FAIL, message, seed, path, kind=why)
