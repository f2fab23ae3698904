"""Speed: time a correct solution beside the library path, grade it against this device's ceiling.

Both are timed in the same check with the project's Timer (CUDA events on a GPU, warm-up, the
median of several runs), each call on the next of several input sets, so a memory-bound kernel
cannot be flattered by inputs left in L2. The figure is the exercise's roofline metric (GB/s or
TFLOP/s, `TimingSpec.work` per call); the grade is its fraction of this device's calibrated
ceiling (gpulab.core.peaks) against the exercise's {bronze, silver, gold} thresholds. The GPU's
temperature and SM clock are read from NVML right after, so a slow run can be explained.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from gpulab.core import peaks as pk
from gpulab.core.devices import detect
from gpulab.core.judging import over_note
from gpulab.core.lead import LEAD_US
from gpulab.core.lead import spin as lead_spin
from gpulab.core.timing import Timer
from gpulab.exercises import api
from gpulab.exercises.exercise_format import GRADES
from gpulab.exercises.loader import Exercise
from gpulab.experiments.base import Context
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.values import NA

_urandom = os.urandom  # bound before any learner code exists (see _CallChecks.after)

IMPLAUSIBLE = 1.5  # a figure this far above the device's own ceiling earns no grade
# Why a figure can still stand above its ceiling once every timed call was checked (no skipped
# work) and waited for on every stream (no bare launch time): what is left to suspect.
BEYOND = (
    "above the re-measured ceiling, though every timed call was checked and waited for on every "
    "stream (so it is neither skipped work nor a launch timed without its kernel): the figure "
    "counts bytes the kernel did not move from memory (inputs served from the L2 cache, reused "
    "in registers, or smaller than the statement says), or the ceiling was measured low "
    "(re-calibrate: gpulab run calibrate)"
)
# The same for a matrix product: the calibration times 8192-size products back to back, at the
# clock the power limit settles to; a check's product is one short call at a time, which can run
# at the boost clock (an 8192 bf16 product ran 17% faster in single calls on an H200).
BEYOND_FLOPS = (
    "above the re-measured ceiling, though every timed call was checked and waited for: the "
    "calibration times large products back to back at the clock the power limit settles to, "
    "and a call this short runs on the boost clock before the limit pulls it down (the SM "
    "clock below is read right after the timing)"
)


def grade_for(fraction: float | None, grades: dict[str, float] | Any) -> str:
    """pass, bronze, silver or gold: the highest threshold `fraction` reaches."""
    best = "pass"
    if fraction is None:
        return best
    for name in GRADES:
        if name in grades and fraction >= grades[name]:
            best = name
    return best


def _timer(actx: api.Context, exp_ctx: Any) -> Any:
    check = getattr(exp_ctx, "check_cancelled", None)
    if actx.quick:
        return Timer(warmup=1, repeats=3, budget_s=0.05, min_runs=3, cancel_check=check)
    return Timer(warmup=2, repeats=15, budget_s=0.4, min_runs=3, cancel_check=check)


def _experiment_context(actx: api.Context, exp_ctx: Any) -> Any:
    if exp_ctx is not None:
        return exp_ctx
    return Context(inventory=detect(), device_index=actx.device_index, quick=actx.quick)


def _rate(work: float, seconds: float, metric: str) -> float | None:
    if seconds <= 0:
        return None
    return work / seconds / (1e12 if metric == "TFLOP/s" else 1e9)


def time_and_grade(
    spec: api.TimingSpec,
    ex: Exercise,
    actx: api.Context,
    exp_ctx: Any = None,
    *,
    guard: Any = None,
    laps: Any = None,
) -> dict[str, Any]:
    """The timing block of a CheckResult (plain JSON values). `laps` (grader.Laps) is told
    where the time went: "timing: inputs", "timing: yours", "timing: verify", "timing: library",
    "timing: ceiling"."""

    def lap(name: str) -> None:
        if laps is not None:
            laps.lap(f"timing: {name}")

    ctx = _experiment_context(actx, exp_ctx)
    timer = _timer(actx, ctx)
    n_sets = max(1, int(spec.sets))
    if actx.quick:
        # The quick timer calls 4 times: with 2 sets some calls are repeats, so skipped work shows.
        n_sets = min(n_sets, 2)
    sets = [spec.setup(i) for i in range(n_sets)]
    turn = [0]
    lap("inputs")

    def rotate() -> None:  # untimed: the next call gets the next input set
        turn[0] = (turn[0] + 1) % n_sets

    calls = _CallChecks(
        spec,
        sets,
        turn,
        n_sets,
        every=bool(actx.gpu or actx.cupy),
        restore=guard.restore if guard is not None else None,
    )
    watch = getattr(actx, "watch", None)
    try:
        learner_t, lead = time_learner(timer, calls, rotate, spec, _lead(spec, actx, watch), watch)
        watched_call(calls, rotate, watch)
    except _TimedCallWrong as exc:
        if guard is not None:
            guard.restore()
        lap("yours")
        sets.clear()
        return {"metric": spec.metric, "wrong": str(exc), "checked_calls": calls.checked}
    last = sets[turn[0]]
    if guard is not None:
        guard.restore()
    lap("yours")
    wrong = None
    if spec.verify is not None:
        why = spec.verify(last)
        wrong = why.message if isinstance(why, api.Mismatch) else (why or None)
        lap("verify")
    library = None
    if spec.library is not None and wrong is None:
        lib_t = timer.measure(
            lambda: spec.library(sets[turn[0]]), sync=spec.sync, before=rotate, lead=lead
        )
        library = {
            "name": spec.library_name,
            "median_s": lib_t.median_s,
            "min_s": lib_t.min_s,
            "runs": lib_t.runs,
            "value": _rate(spec.work, lib_t.median_s, spec.metric),
        }
        lap("library")
    sets.clear()  # free the device memory before the calibration below may need it
    last = None
    state = gpu_state(ctx.inventory, actx.device_index) if (actx.gpu or actx.cupy) else cpu_state()
    use_cpu = not (actx.gpu or actx.cupy)
    value = _rate(spec.work, learner_t.median_s, spec.metric)
    lib_value = library["value"] if library else None
    ceiling_value, ceiling_why, device = None, "", ""
    ceiling_note, remeasured = "", False
    if pk.cached(ctx.inventory, actx.device_index, cpu=use_cpu) is None:
        # Said before the seconds it takes: a learner watching a spinner deserves the reason.
        ctx.progress(0.95, "calibrating this device's ceilings (once; later checks reuse them)")
    try:
        peaks = pk.load_or_measure(ctx, quick=actx.quick, cpu=use_cpu)
        device = peaks.device
        found = pk.peak_for(peaks, spec.ceiling)
        best = max((v for v in (value, lib_value) if v), default=None)
        if found is not None and best is not None and best > found * pk.OVER_CEILING:
            # As for an experiment's row: a figure past the ceiling has the ceiling measured
            # again (once per process), and one still past it says why beside the figure.
            remeasured = pk.remeasure(ctx, peaks, spec.ceiling)
            found = pk.peak_for(peaks, spec.ceiling)
        ceiling_value = float(found) if found is not None else None
        if ceiling_value is None:
            ceiling_why = f"this device has no calibrated {spec.ceiling} figure"
        elif best is not None and found is not None:
            ceiling_note = over_note(100.0 * best / ceiling_value, found, "the timed code")
            if remeasured and best > ceiling_value * pk.OVER_CEILING:
                why = BEYOND_FLOPS if spec.metric == "TFLOP/s" else BEYOND
                ceiling_note = f"{100.0 * best / ceiling_value:.0f}% of {spec.ceiling}: {why}"
    except Exception as exc:  # noqa: BLE001 - a calibration that cannot run must not sink a check
        ceiling_why = f"calibration failed: {type(exc).__name__}: {exc}"
    lap("ceiling")
    fraction = value / ceiling_value if value is not None and ceiling_value else None
    out: dict[str, Any] = {
        "metric": spec.metric,
        "work": spec.work,
        "note": spec.note,
        "sets": n_sets,
        "method": learner_t.method,
        # A spin queued ahead of each start event hid the host's launch latency (core.lead);
        # 0 where none did: no GPU, the spec opted out, or the learner's code used its own stream.
        "lead_us": LEAD_US if lead is not None else 0.0,
        "learner": {
            "median_s": learner_t.median_s,
            "min_s": learner_t.min_s,
            "max_s": learner_t.max_s,
            "runs": learner_t.runs,
            "cold_s": learner_t.cold_s,
            "value": value,
        },
        "library": library,
        "ceiling": {
            "name": spec.ceiling,
            "value": ceiling_value,
            "device": device,
            "why": ceiling_why,
            "note": ceiling_note,  # why a figure here is above 100% of it
            "remeasured": remeasured,
        },
        "fraction": fraction,
        "library_fraction": lib_value / ceiling_value if lib_value and ceiling_value else None,
        "vs_library": value / lib_value if value and lib_value else None,
        "grades": dict(ex.grades),
        "grade": grade_for(fraction, ex.grades) if ex.grades else "pass",
        "device_state": state,
        "quick": actx.quick,
        "checked_calls": calls.checked,  # timed calls whose output was checked (see api)
    }
    if learner_t.min_s <= 0:
        out["suspect"] = "a timed call took no time at all: the timing is not trusted; not graded"
        out["grade"] = "pass"
    elif fraction is not None and fraction > IMPLAUSIBLE:
        # Far above what this device measured itself doing: a timing the learner's code
        # interfered with, or work it skipped. No grade for it.
        out["suspect"] = (
            f"{100 * fraction:.0f}% of the calibrated ceiling is not plausible; not graded: "
            f"{BEYOND}"
        )
        out["grade"] = "pass"
    if wrong:
        out["wrong"] = wrong
    return out


def _streams(watch: Any) -> bool:
    """Whether the learner's code made a stream of its own (the Watch records each one)."""
    return bool(getattr(watch, "streams", None))


def _lead(spec: api.TimingSpec, actx: api.Context, watch: Any) -> Any:
    """The spin queued ahead of each timed call's start event (core.lead), or None: on a CPU,
    where the spec opts out (the host's cost is the lesson), and where the learner's code made
    a stream of its own, whose work would not wait for a spin on the current stream."""
    if not (actx.gpu or actx.cupy) or not spec.lead or _streams(watch):
        return None
    return lead_spin(spec.sync, actx.device_index)


def time_learner(
    timer: Any, calls: Any, rotate: Any, spec: api.TimingSpec, lead: Any, watch: Any
) -> tuple[Any, Any]:
    """(the learner's Timing, the lead it was timed with). A stream of the learner's that
    appears during a timing with a lead has the timing taken again without one: that stream's
    work need not wait for a spin on the current stream, so it could have run before the start
    event."""
    t = timer.measure(
        calls.call, sync=spec.sync, before=calls.before(rotate), after=calls.after, lead=lead
    )
    if lead is not None and _streams(watch):
        lead = None
        t = timer.measure(
            calls.call, sync=spec.sync, before=calls.before(rotate), after=calls.after
        )
    return t, lead


def watched_call(calls: _CallChecks, rotate: Any, watch: Any) -> None:
    """One more call at the timing size, untimed, with the check's refusals on (they cost
    microseconds an operation, so the timed calls ran without them) and its output checked:
    code that calls the library only at sizes the correctness cases never reach fails here."""
    if watch is None or watch.around is None:
        return
    watch.watched = True
    try:
        calls.before(rotate)()
        calls.call()
        calls.after(force=True)
    finally:
        watch.watched = False


class _TimedCallWrong(Exception):
    """A timed call's output was wrong: the timing stops, the check fails with this line."""


class _CallChecks:
    """Around each call the timer makes into the learner's code: prepare its input set
    (poisoned outputs, a changed input element), keep what it returned, and check the output
    afterwards: every call on a device, where a check is a small fraction of the call; on a CPU,
    where it costs as much as the call, the first repeated call and a random third of the rest.
    Calls before the sets come round again are first visits; later ones are repeats, where code
    that skips work it has done before shows."""

    def __init__(
        self,
        spec: api.TimingSpec,
        sets: list[Any],
        turn: list[int],
        n_sets: int,
        every: bool,
        restore: Callable[[], Any] | None = None,
    ) -> None:
        self.spec, self.sets, self.turn, self.n_sets = spec, sets, turn, n_sets
        self.every = every
        self.restore = restore  # the Guard's: what a timed call rebound, put back untimed
        self.index = -1  # calls made so far, less one
        self.checked = 0
        self.returned: Any = None

    def before(self, rotate: Any) -> Any:
        def prepare() -> None:
            rotate()
            self.index += 1
            if self.spec.prepare is not None:
                self.spec.prepare(self.sets[self.turn[0]])

        return prepare

    def call(self) -> None:
        self.returned = self.spec.learner(self.sets[self.turn[0]])

    def after(self, force: bool = False) -> None:
        returned, self.returned = self.returned, None
        if self.restore is not None:  # before the check and the next call's prepare run
            self.restore()
        check = self.spec.check_call
        if check is None:
            return
        k = self.index
        # A third of the later calls, from the OS's entropy through a function bound at import:
        # the learner's code can rebind random.Random's methods, not this
        sampled = k == self.n_sets or (k > self.n_sets and _urandom(1)[0] < 85)
        if not (force or self.every or sampled):
            return
        self.checked += 1
        why = check(self.sets[self.turn[0]], returned)
        if isinstance(why, api.Mismatch):
            why = why.message
        if why:
            repeat = (
                " (a repeated call on the same buffers, after the checked calls were right: "
                "does your code skip work it has done before?)"
                if k >= self.n_sets
                else ""
            )
            raise _TimedCallWrong(f"timed call {k + 1}: {why}{repeat}")


def cpu_state() -> dict[str, Any]:
    """The device state of a CPU run: no temperature or clock to read, and why."""
    return {"temperature_c": None, "sm_clock_mhz": None, "na": "CPU mode: no GPU to read"}


def gpu_state(inventory: Any, device_index: int = 0, session: Any = None) -> dict[str, Any]:
    """The GPU's temperature (C) and SM clock (MHz) from NVML, or None with the reason in `na`.
    `session`: an NvmlSession (tests pass one over the fake NVML); default one per process."""
    uuid = ""
    for d in getattr(inventory, "devices", []):
        if d.kind == "cuda" and d.index == device_index:
            uuid = d.uuid or ""
    global _SESSION
    if session is None:
        if _SESSION is None:  # nvmlInit costs tens of ms: once per process, not once per check
            _SESSION = NvmlSession()
        session = _SESSION
    if not session.open():
        why = session.error.reason if session.error else "NVML is not available"
        return {"temperature_c": None, "sm_clock_mhz": None, "na": why}
    index = device_index
    if uuid:  # CUDA and NVML may number GPUs differently (CUDA_VISIBLE_DEVICES)
        count = session.count()
        for i in range(count if isinstance(count, int) else 0):
            got = session.call(i, "nvmlDeviceGetUUID")
            if not isinstance(got, NA) and _same_uuid(_text(got), uuid):
                index = i
                break
    temp = session.call(index, "nvmlDeviceGetTemperature", 0)  # NVML_TEMPERATURE_GPU
    clock = session.call(index, "nvmlDeviceGetClockInfo", 1)  # NVML_CLOCK_SM
    reasons = [
        f"{k}: {v.reason}"
        for k, v in (("temperature", temp), ("clock", clock))
        if isinstance(v, NA)
    ]
    return {
        "temperature_c": None if isinstance(temp, NA) else int(temp),
        "sm_clock_mhz": None if isinstance(clock, NA) else int(clock),
        "na": "; ".join(reasons),
    }


_SESSION: Any = None


def _same_uuid(a: str, b: str) -> bool:
    return a.lower().removeprefix("gpu-") == b.lower().removeprefix("gpu-")


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
