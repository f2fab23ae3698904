"""Speed: time a correct solution beside the library path, grade it against this device's ceiling.

Both are timed in the same check with the project's Timer (CUDA events on a GPU, warm-up, the
median of several runs), each call on the next of several input sets, so a memory-bound kernel
cannot be flattered by inputs left in L2. The figure is the exercise's roofline metric (GB/s or
TFLOP/s, `TimingSpec.work` per call); the grade is its fraction of this device's calibrated
ceiling (gpulab.core.peaks) against the exercise's {bronze, silver, gold} thresholds. The GPU's
temperature and SM clock are read from NVML right after, so a slow run can be explained.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulab.core import peaks as pk
from gpulab.core.devices import detect
from gpulab.core.interval import median_interval
from gpulab.core.judging import over_note
from gpulab.core.lead import LEAD_US, Spin
from gpulab.core.lead import spin as lead_spin
from gpulab.core.rounds import Contender, Rounds
from gpulab.exercises import api
from gpulab.exercises import yardstick as ys
from gpulab.exercises.exercise_format import GRADES
from gpulab.exercises.loader import Exercise
from gpulab.experiments.base import Context
from gpulab.telemetry.window import ClockWindow, cpu_state, gpu_state

_urandom = os.urandom  # bound before any learner code exists (see _CallChecks.after)
_now = time.perf_counter  # bound at import, like the timer's own clock

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


@dataclass(frozen=True)
class Plan:
    """How many rounds a check times: at least `min_rounds`, then more up to `rounds` or
    `budget_s`; while the interval straddles a grade line, `batch` more at a time, up to
    `max_rounds` or `extra_s` more seconds."""

    warmup: int
    min_rounds: int
    rounds: int
    budget_s: float
    max_rounds: int
    extra_s: float
    batch: int


QUICK = Plan(warmup=1, min_rounds=3, rounds=3, budget_s=0.05, max_rounds=3, extra_s=0.0, batch=0)
FULL = Plan(warmup=2, min_rounds=9, rounds=15, budget_s=0.4, max_rounds=60, extra_s=1.0, batch=6)
# A CPU's calls take milliseconds, not microseconds, and its grade teaches least: fewer rounds,
# so a check from the shell answers in about a second there too
CPU = Plan(warmup=1, min_rounds=7, rounds=9, budget_s=0.25, max_rounds=21, extra_s=0.4, batch=4)


@dataclass
class YardRun:
    """The yardstick a check grades against: which file it is and its TimingSpec (built by the
    exercise's own timing() around the yardstick's function, so it does the same work)."""

    choice: Any  # yardstick.Choice
    spec: api.TimingSpec


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
    yard: YardRun | None = None,
) -> dict[str, Any]:
    """The timing block of a CheckResult (plain JSON values). `yard`: the yardstick timed in
    the same rounds, whose speed the grade is a fraction of (without one the learner's code is
    its own yardstick: tests of the timing alone). `laps` (run_check.Laps) is told where the
    time went: "timing: inputs", "timing: rounds", "timing: verify", "timing: ceiling"."""

    def lap(name: str) -> None:
        if laps is not None:
            laps.lap(f"timing: {name}")

    ctx = _experiment_context(actx, exp_ctx)
    on_device = bool(actx.gpu or actx.cupy)
    plan = QUICK if actx.quick else (FULL if on_device else CPU)
    n_sets = max(1, int(spec.sets))
    if actx.quick or not on_device:
        # The quick plan calls 4 times: with 2 sets some calls are repeats, so skipped work
        # shows; on a CPU two sets of 64 MiB each already pass any last-level cache.
        n_sets = min(n_sets, 2)
    sets = [spec.setup(i) for i in range(n_sets)]
    yspec = yard.spec if yard is not None else None
    # Two sets for the yardstick: at the timing size each is far beyond any L2, and its calls
    # alternate between them
    ysets = [yspec.setup(i) for i in range(min(n_sets, 2))] if yspec is not None else []
    # The library gets sets of its own too: its answer written into a set of the learner's
    # would stand in for a call of theirs that wrote nothing
    lsets = [spec.setup(n_sets + i) for i in range(min(n_sets, 2))] if spec.library else []
    turn = [0]
    lap("inputs")

    def rotate() -> None:  # untimed: the next call gets the next input set
        turn[0] = (turn[0] + 1) % n_sets

    calls = _CallChecks(
        spec,
        sets,
        turn,
        n_sets,
        every=on_device or spec.check_every,
        restore=guard.restore if guard else None,
    )
    watch = getattr(actx, "watch", None)
    try:
        taken = _take_rounds(
            spec, yspec, (sets, ysets, lsets), calls, rotate, plan, actx, ctx, watch
        )
        rounds, lead, window = taken.rounds, taken.lead, None
        grade_lines = list(ex.grades.values()) if ex.grades and yspec is not None else []
        extended = _certify(rounds, grade_lines, plan, yspec is not None)
        window = taken.close()
        retimed = False
        if _disturbed(window) and not actx.quick:
            # Timed again once: a window at the power limit, under a thermal slowdown or beside
            # another process's kernels is not the figure the code earns on a calm GPU of its
            # own; a second one is named in the verdict
            taken.again()
            rounds = taken.rounds
            extended += _certify(rounds, grade_lines, plan, yspec is not None)
            window = taken.close()
            retimed = True
        traced_call(calls, rotate, watch)
    except _TimedCallWrong as exc:
        if guard is not None:
            guard.restore()
        lap("rounds")
        for kept in (sets, ysets, lsets):
            kept.clear()
        return {"metric": spec.metric, "wrong": str(exc), "checked_calls": calls.checked}
    last = sets[turn[0]]
    if guard is not None:
        guard.restore()
    lap("rounds")
    wrong = None
    if spec.verify is not None:
        why = spec.verify(last)
        wrong = why.message if isinstance(why, api.Mismatch) else (why or None)
        lap("verify")
    for kept in (sets, ysets, lsets):  # free the device memory the calibration may need
        kept.clear()
    last = None
    learner_t = rounds.timing(YOU)
    value = _rate(spec.work, learner_t.median_s, spec.metric)
    library: dict[str, Any] | None = None
    lib_value: float | None = None
    if spec.library is not None:
        lib_t = rounds.timing(LIBRARY)
        lib_value = _rate(spec.work, lib_t.median_s, spec.metric)
        library = {
            "name": spec.library_name,
            "median_s": lib_t.median_s,
            "min_s": lib_t.min_s,
            "runs": lib_t.runs,
            "value": lib_value,
        }
    yard_t = rounds.timing(YARD) if yspec is not None else None
    yard_value = _rate(spec.work, yard_t.median_s, spec.metric) if yard_t else None
    state = gpu_state(ctx.inventory, actx.device_index) if on_device else cpu_state()
    ceiling = _ceiling(ctx, actx, spec, [value, lib_value, yard_value])
    lap("ceiling")
    ceiling_value = ceiling["value"]

    def of_ceiling(v: float | None) -> float | None:
        return v / ceiling_value if v is not None and ceiling_value else None

    fraction = of_ceiling(value)
    out: dict[str, Any] = {
        "metric": spec.metric,
        "work": spec.work,
        "note": spec.note,
        "sets": n_sets,
        "method": learner_t.method,
        # A spin queued ahead of each start event hid the host's launch latency (core.lead),
        # grown to cover the yardstick's; 0 where none did: no GPU, the spec opted out, or the
        # learner's code used its own stream.
        "lead_us": float(getattr(lead, "us", LEAD_US)) if lead is not None else 0.0,
        "learner": {
            "median_s": learner_t.median_s,
            "min_s": learner_t.min_s,
            "max_s": learner_t.max_s,
            "runs": learner_t.runs,
            "cold_s": learner_t.cold_s,
            "value": value,
        },
        "library": library,
        "ceiling": ceiling,
        "fraction": fraction,
        "library_fraction": of_ceiling(lib_value),
        "vs_library": value / lib_value if value and lib_value else None,
        "grades": dict(ex.grades),
        "device_state": state,
        "window": window,
        "rounds": rounds.done,
        "extended_rounds": extended,
        "retimed": retimed,
        "quick": actx.quick,
        "checked_calls": calls.checked,  # timed calls whose output was checked (see api)
    }
    if yard is not None and yard_t is not None:
        out["yardstick"] = _yardstick_block(yard, yard_t, yard_value, of_ceiling(yard_value))
        _grade_by_yardstick(out, rounds, ex, yard, ctx, actx, value, yard_value, window)
    else:
        out["grade"] = "pass"
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


YOU, YARD, LIBRARY = "you", "yardstick", "library"


def _ceiling(ctx: Any, actx: api.Context, spec: api.TimingSpec, values: list[Any]) -> dict:
    """This device's calibrated ceiling for the spec's figure, re-measured once where a figure
    beats it by more than OVER_CEILING, with the note on any figure still above it."""
    use_cpu = not (actx.gpu or actx.cupy)
    ceiling_value, ceiling_why, device = None, "", ""
    ceiling_note, remeasured = "", False
    if pk.figure(spec.ceiling) == pk.LINK:  # nothing to calibrate, nor to wait for
        ceiling_why = pk.LINK_WHY
    else:
        if pk.cached(ctx.inventory, actx.device_index, cpu=use_cpu) is None:
            # Said before the seconds it takes: a learner watching a spinner deserves the reason.
            ctx.progress(0.95, "calibrating this device's ceilings (once; later checks reuse them)")
        try:
            peaks = pk.load_or_measure(ctx, quick=actx.quick, cpu=use_cpu)
            device = peaks.device
            found = pk.peak_for(peaks, spec.ceiling)
            best = max((v for v in values if v), default=None)
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
    return {
        "name": spec.ceiling,
        "value": ceiling_value,
        "device": device,
        "why": ceiling_why,
        "note": ceiling_note,  # why a figure here is above 100% of it
        "remeasured": remeasured,
    }


def _yardstick_block(yard: YardRun, t: Any, value: Any, fraction: Any) -> dict[str, Any]:
    return {
        "label": yard.choice.label,
        "file": yard.choice.path.name,
        "median_s": t.median_s,
        "min_s": t.min_s,
        "max_s": t.max_s,
        "runs": t.runs,
        "value": value,
        "fraction": fraction,
    }


def _grade_by_yardstick(
    out: dict[str, Any],
    rounds: Rounds,
    ex: Exercise,
    yard: YardRun,
    ctx: Any,
    actx: api.Context,
    value: float | None,
    yard_value: float | None,
    window: dict[str, Any],
) -> None:
    """The grade: the learner's speed as a fraction of the yardstick's, paired by round, with
    its interval; against the yardstick's record on this device where this check's yardstick
    ran slowed. Keeps the yardstick's figure in the record when the window was calm."""
    ratio = median_interval(rounds.ratios(YARD, YOU))
    figure = ratio.median
    basis = "rounds"
    device = bool(actx.gpu or actx.cupy)
    key = ys.key_for(ctx.inventory, actx.device_index, cpu=not device)
    kept = ys.record(ex, yard.choice, key)
    slowed = ""
    # On the CPU nothing of yours runs on after your call returns (threads are refused at import
    # and in every call; torch's CPU ops finish before they return): a yardstick slower than its
    # record there was slowed by the machine's other work, which slowed your rounds as much, so
    # the paired rounds grade. On a loaded laptop the record cost correct files a grade
    if device and kept and yard_value and value and float(kept.get("value") or 0) > 0:
        best = float(kept["value"])
        rates = [_rate(out["work"], t, out["metric"]) for t in rounds.times[YOU]]
        of_best = median_interval([r / best for r in rates if r])
        if yard_value < ys.SLOWED * best and of_best.median < figure:
            # Something slowed the yardstick in this check: grade against its record here,
            # the interval too (your speed each round over the record), or the line would
            # show one figure with another's interval
            ratio, figure = of_best, of_best.median
            basis = "record"
            slowed = (
                f"{yard.choice.words} ran at {yard_value:,.4g} {out['metric']} in this check, "
                f"below its best here ({best:,.4g}): graded against that best"
            )
    if not actx.quick and yard_value and not _disturbed(window) and not slowed:
        kept = ys.observe(
            ex,
            yard.choice,
            key,
            value=yard_value,
            fraction=out["yardstick"]["fraction"],
            metric=out["metric"],
            ceiling=out["ceiling"]["name"],
        )
    out["of_yardstick"] = {**ratio.to_dict(), "figure": figure, "basis": basis}
    out["yardstick"]["record"] = kept
    if slowed:
        out["yardstick"]["slowed"] = slowed
    lines = ratio.straddles(ex.grades.values()) if ex.grades else []
    if lines:
        out["of_yardstick"]["straddles"] = lines
    out["grade"] = grade_for(figure, ex.grades) if ex.grades else "pass"


def _disturbed(window: dict[str, Any]) -> bool:
    """Whether the GPU was held back (throttled) or shared with another process while timed."""
    return bool(window.get("throttled") or window.get("shared"))


@dataclass
class _Taken:
    """The rounds of one check, with the lead they ran behind and the clock window around them;
    `again` times a fresh set of rounds (a throttled window)."""

    rounds: Rounds
    lead: Any
    window: Any
    make: Any  # () -> (Rounds, window), for `again`
    plan: Plan

    def close(self) -> dict[str, Any]:
        if self.window is None:
            return {"na": "CPU mode: no GPU to read", "throttled": False}
        self.window.close(_now())
        return self.window.summary()

    def again(self) -> None:
        self.rounds, self.window = self.make()
        _initial(self.rounds, self.window, self.plan)


def _initial(rounds: Rounds, window: Any, plan: Plan) -> None:
    if window is not None:
        window.open(_now())
    t0 = _now()
    rounds.extend(plan.min_rounds)
    while rounds.done < plan.rounds and _now() - t0 < plan.budget_s:
        rounds.extend(1)


def _take_rounds(
    spec: api.TimingSpec,
    yspec: api.TimingSpec | None,
    all_sets: tuple[list[Any], list[Any], list[Any]],
    calls: _CallChecks,
    rotate: Any,
    plan: Plan,
    actx: api.Context,
    ctx: Any,
    watch: Any,
) -> _Taken:
    """Warm every contender, then time the first rounds; a stream of the learner's that appears
    during rounds behind a lead has every round taken again without one (its work need not wait
    for a spin on the current stream, so it could have run before the start event)."""
    _, ysets, lsets = all_sets
    ycalls = _YardCalls(yspec, ysets, watch) if yspec is not None else None
    lib_turn = [0]

    def lib_next() -> None:
        lib_turn[0] = (lib_turn[0] + 1) % len(lsets)

    def lib_call() -> None:
        assert spec.library is not None
        spec.library(lsets[lib_turn[0]])

    contenders = [Contender(YOU, calls.call, calls.before(rotate), calls.after)]
    if ycalls is not None:
        contenders.append(Contender(YARD, ycalls.call, ycalls.before, ycalls.after))
    if spec.library is not None:
        contenders.append(Contender(LIBRARY, lib_call, lib_next))
    cancel = getattr(ctx, "check_cancelled", None)
    on_device = bool(actx.gpu or actx.cupy)

    def make(lead: Any) -> Any:
        def build() -> tuple[Rounds, Any]:
            window = ClockWindow(ctx.inventory, actx.device_index) if on_device else None
            mark = (lambda: window.mark(_now())) if window is not None else None
            r = Rounds(
                contenders,
                sync=spec.sync,
                lead=lead,
                cancel_check=cancel,
                mark=mark,
                lead_from=(YARD,) if ycalls is not None else (),
            )
            return r, window

        return build

    lead = _lead(spec, actx, watch)
    rounds, window = make(lead)()
    rounds.warm(plan.warmup)
    _initial(rounds, window, plan)
    if lead is not None and _streams(watch):
        lead = None
        cold = rounds.cold
        rounds, window = make(None)()
        rounds.cold = cold
        _initial(rounds, window, plan)
    return _Taken(rounds, lead, window, make(lead), plan)


def _certify(rounds: Rounds, lines: list[float], plan: Plan, paired: bool) -> int:
    """More rounds, `plan.batch` at a time, while the interval of the learner's fraction of the
    yardstick holds a grade line, up to `plan.max_rounds` or `plan.extra_s` seconds; returns how
    many were added."""
    if not paired or not lines or plan.batch <= 0:
        return 0
    t0 = _now()
    added = 0
    while rounds.done < plan.max_rounds and _now() - t0 < plan.extra_s:
        if not median_interval(rounds.ratios(YARD, YOU)).straddles(lines):
            break
        n = min(plan.batch, plan.max_rounds - rounds.done)
        rounds.extend(n)
        added += n
    return added


def _streams(watch: Any) -> bool:
    """Whether the learner's code made a stream of its own (the Watch records each one)."""
    return bool(getattr(watch, "streams", None))


def _lead(spec: api.TimingSpec, actx: api.Context, watch: Any) -> Any:
    """The spin queued ahead of each timed call's start event (core.lead), or None: on a CPU,
    where the spec opts out (the host's cost is the lesson), and where the learner's code made
    a stream of its own, whose work would not wait for a spin on the current stream."""
    if not (actx.gpu or actx.cupy) or not spec.lead or _streams(watch):
        return None
    made = lead_spin(spec.sync, actx.device_index)
    untimed = getattr(watch, "lead", None)
    if made is not None and isinstance(untimed, Spin):
        made.tie(untimed)  # as long as the checked calls' spin, and they grow together
    return made


def traced_call(calls: _CallChecks, rotate: Any, watch: Any) -> None:
    """One more call at the timing's size after the rounds, made as a checked call is (the
    kernels it ran recorded, where a trace can: gpulab.exercises.kernel_trace), its output
    checked: work the library does only at that size shows here. The learner's code cannot
    tell it from a timed call by its size, nor by any mode: both run the same watch."""
    if watch is None or getattr(watch, "trace", None) is None:
        return
    was, watch.timing = watch.timing, False
    try:
        calls.before(rotate)()
        calls.call()
        calls.after(force=True)
    finally:
        watch.timing = was


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
        self.kinds: list[tuple[str, type]] = []
        self.collector = False  # whether the collector was on before this call's prepare
        self.samples: list[tuple[Any, Any, Any]] = []

    def before(self, rotate: Any) -> Any:
        def prepare() -> None:
            # the collector off from here until this call's check has read (sandbox's
            # collector_off): a finalizer of the learner's cannot run between the two
            self.collector = gc.isenabled()
            gc.disable()
            rotate()
            self.index += 1
            if self.spec.prepare is not None:
                self.spec.prepare(self.sets[self.turn[0]])
            self.kinds = _kinds(self.sets[self.turn[0]])
            inputs = self.spec.inputs
            self.samples = [_sample(x) for x in inputs(self.sets[self.turn[0]])] if inputs else []

        return prepare

    def call(self) -> None:
        self.returned = self.spec.learner(self.sets[self.turn[0]])

    def after(self, force: bool = False) -> None:
        try:
            self._after(force)
        finally:
            if self.collector:
                gc.enable()

    def _after(self, force: bool) -> None:
        returned, self.returned = self.returned, None
        if self.restore is not None:  # before the check and the next call's prepare run
            self.restore()
        # The check reads the inputs it handed over (a sum of them, the library's answer on
        # them) with torch's own calls: an input whose class the call swapped for a subclass
        # answers those calls itself (tree-reduction: an eighth of the work graded gold, the
        # subclass's sum agreeing with it). Every call, checked or not, before anything reads
        for (where, kind), (_, now) in zip(
            self.kinds, _kinds(self.sets[self.turn[0]]), strict=False
        ):
            # an array's class; an item a call may fill in (None, then its output) is no input
            if now is not kind and kind.__module__.split(".")[0] in ("torch", "numpy", "cupy"):
                raise _TimedCallWrong(
                    f"timed call {self.index + 1}: your code changed the class of its input"
                    f"{where} from {kind.__name__} to {now.__name__}: a subclass answers the "
                    "calls the check makes on it afterwards. Leave the inputs as they came"
                )
        for i, (x, idx, was) in enumerate(self.samples):
            if not _sampled(x, idx, was):
                raise _TimedCallWrong(
                    f"timed call {self.index + 1}: your code changed its input {i + 1}: a "
                    "timed call is checked against its inputs as they are after it, so they "
                    "must stay as they came (work on new buffers)"
                )
        self.samples = []
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
            # Every input was rewritten before this call (gpulab.exercises.fresh) and the
            # checked calls were right: what is left is work kept from before, or skipped
            family = (
                "work kept from an earlier call? every input was rewritten before this call, "
                "after the checked calls were right"
                if k >= self.n_sets
                else "work skipped at this size? the checked calls were right"
            )
            raise _TimedCallWrong(f"timed call {k + 1}: {why} ({family})")


class _YardCalls:
    """Around each call of the yardstick: the next of its input sets, prepared as the learner's
    are (poisoned outputs, a changed element), so both sides do the same work under the same
    conditions; its first timed output is checked (ours must be right, or the grade means
    nothing). The function inside its spec is wrapped by the grader (Watch.ours): timed at the
    learner's per-call cost, aside from their record."""

    def __init__(self, spec: api.TimingSpec, sets: list[Any], watch: Any) -> None:
        self.spec, self.sets, self.watch = spec, sets, watch
        self.turn = 0
        self.returned: Any = None
        self.checked = False
        self.collector = False

    def before(self) -> None:
        # the collector off around each call as around the learner's (_CallChecks): neither
        # side pays for a pass the other does not
        self.collector = gc.isenabled()
        gc.disable()
        self.turn = (self.turn + 1) % len(self.sets)
        if self.spec.prepare is not None:
            self.spec.prepare(self.sets[self.turn])

    def call(self) -> None:
        self.returned = self.spec.learner(self.sets[self.turn])

    def after(self) -> None:
        try:
            self._after()
        finally:
            if self.collector:
                gc.enable()

    def _after(self) -> None:
        returned, self.returned = self.returned, None
        if self.checked or self.spec.check_call is None:
            return
        self.checked = True
        why = self.spec.check_call(self.sets[self.turn], returned)
        if isinstance(why, api.Mismatch):
            why = why.message
        if why:
            raise YardstickWrong(f"the yardstick's timed call is wrong: {why}")


def _kinds(inputs: Any, where: str = "", depth: int = 0) -> list[tuple[str, type]]:
    """(where, class) of an input set and of what its tuples, lists and dicts hold (two levels):
    what a timed call must leave as it found. `where` is "" for the set, "[1]" for an item."""
    out = [(where, type(inputs))]
    if depth >= 2:
        return out
    if isinstance(inputs, tuple | list):
        for i, item in enumerate(inputs):
            out += _kinds(item, f"{where}[{i}]", depth + 1)
    elif isinstance(inputs, dict):
        for key, item in inputs.items():
            out += _kinds(item, f"{where}[{key!r}]", depth + 1)
    return out


SAMPLE = 1024  # elements of each input compared across a timed call


def _sample(x: Any) -> tuple[Any, Any, Any]:
    """(x, positions, a copy of the elements there): SAMPLE positions drawn from the OS's
    entropy, new every call, so a call cannot know which of its input's elements are looked at;
    an input changed enough to make the expected answer cheaper (zeroed, halved) shows with
    certainty. On a device the positions go over from pinned memory and the copy is a gather
    queued on the stream: nothing here waits for the GPU. A wait would leave it idle ahead of
    the timed call (the yardstick's prepare waits for nothing), and a Triton reference whose
    launch takes longer than the lead spin graded 0.53 of itself on an H200."""
    n = int(x.numel()) if type(x).__module__.startswith("torch") else int(x.size)
    pos = _positions(n)
    top = type(x).__module__.split(".")[0]
    if top == "torch":
        import torch  # deferred: already imported where an input is a tensor

        host = torch.from_numpy(pos)
        if x.device.type == "cuda":
            host = host.pin_memory()  # a copy from pageable memory would wait for the stream
        idx: Any = host.to(x.device, non_blocking=True)
    elif top == "cupy":
        import cupy  # deferred: as torch

        idx = cupy.asarray(pos)  # staged through pinned memory, on the current stream
    else:
        idx = pos
    return x, idx, x.reshape(-1)[idx]


def _positions(n: int) -> np.ndarray:
    """Up to SAMPLE positions in [0, n), sorted, straight from the OS's entropy (_urandom,
    bound at import): no state in this process tells them ahead. They came from a
    random.Random, whose state a call can read: a red team's tree_sum kept it from the call
    before, knew this call's positions, zeroed its input everywhere else and summed only those
    (silver, with the work skipped)."""
    if n <= SAMPLE:
        return np.arange(n, dtype=np.int64)
    raw = np.frombuffer(_urandom(8 * SAMPLE), dtype=np.uint64) % np.uint64(n)
    return np.unique(raw).astype(np.int64)  # sorted; a repeat leaves one fewer


def _sampled(x: Any, idx: Any, was: Any) -> bool:
    """Whether x's elements at idx are, bit for bit, those copied before the call."""
    return api.to_host(x.reshape(-1)[idx]).tobytes() == api.to_host(was).tobytes()


class YardstickWrong(Exception):
    """Our own yardstick failed its check: a bug of the exercise, never the learner's."""
