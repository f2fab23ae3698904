"""The grader: one check of a learner's file, in the order that keeps it honest.

    cases -> every reference -> load the learner's file fresh -> per case: run on copies with
    poisoned outputs, restore what the learner patched, compare -> time (only if all passed)

It runs wherever it is called; `gpulab.exercises.job` runs it inside the worker as the hidden
experiment `exercise-check`, so the runner's cancel, time limit and crash survival apply.
A wrong answer or an exception in the learner's code is a *completed* check with verdict "fail";
only what leaves the worker unusable (an illegal address, an out-of-memory) is raised as
`LearnerCrash`, a failed job, so the worker retires or frees its memory as after any experiment.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec

from gpulab.core import events as ev
from gpulab.core.errors import Cancelled
from gpulab.core.failures import classify
from gpulab.core.lead import Spin
from gpulab.core.lead import spin as lead_spin
from gpulab.exercises import api, veil
from gpulab.exercises import yardstick as ys
from gpulab.exercises.kernel_trace import KernelTrace
from gpulab.exercises.loader import Exercise
from gpulab.exercises.outcome import FAIL, PASS, CaseRow, CheckResult
from gpulab.exercises.own_work import OwnWorkError, Watch
from gpulab.exercises.reach import reaches_for_the_grader
from gpulab.exercises.refuse import NativeCode, aliases_refused, watching
from gpulab.exercises.sandbox import (
    INTEROP_NAME,
    Guard,
    LearnerError,
    collector_off,
    describe,
    foreign_threads,
    forget,
    fresh_name,
    interop_threads,
    intra_op_pool_started,
    load_learner,
    load_text,
    native_threads,
)
from gpulab.exercises.speed import YardRun, YardstickWrong, time_and_grade

_now = time.perf_counter  # bound before any learner's code could rebind it
P = ParamSpec("P")
# Added to a wrong output when the call ran on a gated non-blocking stream (own_work's doc)
SIDE_STREAM = (
    "your function launched on a non-blocking stream and returned before its kernel finished: "
    "work left on another stream? Synchronize it, or make the current stream wait for it"
)


class ExerciseBug(Exception):
    """Our check.py failed before the learner's code ran: a bug of the exercise, not the learner's."""

    kind = "experiment-error"


class LearnerCrash(Exception):
    """The learner's code left the worker unusable; raised so the worker recovers (see module doc)."""

    def __init__(self, kind: str, message: str, check: dict[str, Any]) -> None:
        super().__init__(message)
        self.kind = kind
        self.extra = {"check": check}


class Laps:
    """Wall time per phase of one check, so a slow check says where its seconds went (the
    bench records it; a person sees it when a check takes a second or more). Device work is
    inside the phase that waits for it: every phase ends on the host with the data there."""

    def __init__(self, phases: dict[str, float], start: float) -> None:
        self.phases = phases
        self.last = start

    def lap(self, name: str) -> None:
        """Close the current phase as `name`, adding its seconds."""
        now = _now()
        self.phases[name] = self.phases.get(name, 0.0) + (now - self.last)
        self.last = now


def _rest_as_other(result: CheckResult) -> None:
    """What no lap counted (restoring patched names, bookkeeping) as "other", so the phases sum
    to the check's seconds however it ended."""
    rest = result.seconds - sum(result.phases.values())
    if rest > 0:
        result.phases["other"] = result.phases.get("other", 0.0) + rest


def load_check(ex: Exercise) -> Any:
    """The exercise's check.py loaded as a fresh module; a broken check says it is ours, not the
    learner's."""
    path = ex.check_path
    try:
        return load_text(path.read_text(encoding="utf-8"), path, fresh_name("check", ex.id))
    except Exception as exc:  # re-raised as ours: a check that will not load is our bug
        raise ExerciseBug(f"{path} failed to load: {type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def loaded_check(ex: Exercise) -> Iterator[Any]:
    """load_check for a block, the module out of sys.modules after it: a check module left
    there outlives its job, and a learner's file loaded later in the worker finds it among the
    grader's (a check-module-rebound shortcut rebound a prepare's leftover, not its check's)."""
    check = load_check(ex)
    try:
        yield check
    finally:
        forget(check)


def _ours(what: str, ex: Exercise, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # re-raised as ours: the check's own code failed
        raise ExerciseBug(
            f"the check of {ex.id} failed in {what}: {describe(exc, ex.check_path)}"
        ) from exc


def _retiring(check: Callable[P, CheckResult]) -> Callable[P, CheckResult]:
    """A check that marks its result to retire the worker when it started torch's inter-op
    threads (torch.jit.fork in a call): they outlive it, and a pool that already exists lets
    the next file's fork at import start no new thread, which is how load_learner sees one."""

    @functools.wraps(check)
    def checked(*args: P.args, **kwargs: P.kwargs) -> CheckResult:
        intra_op_pool_started()
        threads = native_threads()
        t0 = _now()
        result = check(*args, **kwargs)
        if not result.retire and interop_threads(threads):
            result.retire = "the check started torch's inter-op threads (torch.jit.fork)"
        # A thread started in C during the calls, still running: a red team's first call made a
        # one-rank gloo group whose Future callback then served torch.sum to every later call
        # from gloo's thread, out of the check's per-thread modes (gold, no tree). A fork of
        # torch's (PTThreadPool) carries the modes with it: it only retires the worker.
        foreign = [n for n in foreign_threads(threads) if n != INTEROP_NAME]
        if foreign:
            result.retire = f"a thread started in the check still runs ({foreign[0]})"
            # On a GPU too: on two H200s (bench/results/probe-threads-h200x2.log) our references,
            # experts and right/ files of 33 exercises (CuPy, Triton, Inductor, the profiler's
            # CUPTI) left no named thread but the driver's (cuda*) and pools that kept a name
            # they inherited, which foreign_threads does not count
            if result.verdict == PASS:
                _fail(result, "wrong", _still_running(foreign[0]), t0)
        return result

    return checked


def _still_running(name: str) -> str:
    return (
        f"your code started a thread that is still running (a native thread named {name}): work "
        "it does beside your function is outside the calls the check watches and times; start none"
    )


@_retiring
def run_check(
    ex: Exercise,
    path: Path,
    seed: int,
    actx: api.Context,
    *,
    exp_ctx: Any = None,
    on_case: Callable[[int, int, CaseRow], None] | None = None,
    first_failure: bool = False,
) -> CheckResult:
    """Check `path` against exercise `ex` with the inputs of `seed`. `exp_ctx` (an experiments
    Context) gives cancellation, logs and the calibrated ceilings for timing. `first_failure`
    stops at the first wrong input set (a sweep of known-wrong files: the verdict is the same,
    the message the first failing case's, where a later case that raises would have named
    itself instead); a learner sees every case."""
    t0 = _now()
    result = CheckResult(ex.id, FAIL, "", seed, str(path), device=actx.device)
    laps = Laps(result.phases, t0)
    check = load_check(ex)
    learner = yard_module = None
    # Installed before the Guard's snapshot, so restoring what the learner patched keeps it.
    own = getattr(check, "OWN_KERNEL", False)
    watch = Watch(
        require_kernel=own if own == "raw" or isinstance(own, tuple) else bool(own), source=path
    )
    actx.watch = watch
    actx.reference = lambda: watch.ours(ys.reference_entry(ex))
    actx.notes = []
    refuse = getattr(check, "ALLOW", None) or getattr(check, "REFUSE", None)
    if refuse:
        watch.around = _refusing(refuse)
    reaching = _reaching(path, refusing=bool(refuse), allowing=hasattr(check, "ALLOW"))
    if reaching:
        return _fail(result, "wrong", reaching, t0)
    try:
        # Bound now: a learner who rebinds api.compare_arrays or NumPy later changes nothing here.
        compare = getattr(check, "compare", None) or _default_compare
        actx.phase = "cases"
        cases = _ours("cases()", ex, lambda: list(check.cases(actx)))
        laps.lap("inputs")
        actx.phase = "timing"
        wants = [
            _ours(f"expected() of {c.name}", ex, functools.partial(check.expected, c, actx))
            for c in cases
        ]
        laps.lap("references")
        # Our yardstick is loaded before the learner's file exists and before the watch is
        # installed: its kernels are the check's own, and nothing the learner's import patches
        # changes how it was built
        yard_module, yard_fn, yard_choice = _load_yardstick(ex) if ex.timed else (None, None, None)
        watch.lead = _untimed_lead(actx)
        watch.trace = _kernel_trace(ex, check, actx)
        veil.install()  # the profiler looks off to the learner's code, traced call or timed
        watch.install()
        # (not where ranks run the function: each loads it again from its module's file, and
        # a collective's host time is not a launch a spin should hide)
        if yard_fn is not None and isinstance(watch.lead, Spin) and cases and not ex.ranked:
            _ours(
                "the yardstick's first case",
                ex,
                lambda: _cover(check, watch, yard_fn, cases[0], actx),
            )
        # gpulab's classes too: a red team rebound Rounds._one, the Watch's require_kernel and
        # the emulator's launch record on their classes at import. And the check's own module
        # and our yardstick's (loaded by path, in sys.modules while they run): another rebound
        # the check's run() and timing() to run our solution in place of theirs (gold)
        graders = tuple(m for m in (check, yard_module) if isinstance(m, types.ModuleType))
        guard = Guard(classes=True, extra=graders)
        result.cases = [CaseRow(c.name, None) for c in cases]
        aliased: list[str] = []  # memory shared with NumPy at import (refuse.aliases_refused)
        native = _native_watch(check, actx)
        try:
            with watch.loading(), aliases_refused(aliased):
                learner, fn = load_learner(path, ex.id, ex.entry)
        except LearnerError as exc:
            result.restored = guard.restore()
            if exc.leftover:
                result.retire = "the learner's file left a thread or a process running"
            if aliased:
                return _fail(result, "wrong", aliased[0], t0)
            return _fail(result, "error", str(exc), t0)
        if aliased:  # refused, and the file caught it and loaded on
            result.restored = guard.restore()
            return _fail(result, "wrong", aliased[0], t0)
        built = native.loaded() if native is not None else None
        if built:
            result.restored = guard.restore()
            return _fail(result, "wrong", built, t0)
        # a speed setting changed at import is put back: each call is then held to it
        result.restored = guard.restore() + guard.hooks_changed() + guard.speed_changed()
        changed = _graders_own(guard)
        if changed:
            return _fail(result, "wrong", changed, t0)
        fn = watch.call(fn)
        watch.after_call = guard.restore  # what each call rebinds, put back as it returns
        laps.lap("load")
        for i, (case, want) in enumerate(zip(cases, wants, strict=True)):
            if exp_ctx is not None:
                exp_ctx.check_cancelled()
            row = result.cases[i]
            c0 = _now()
            calls_before = len(watch.calls)
            error: str | None
            final = False
            try:
                with collector_off():  # until the check has read the outputs
                    got = check.run(fn, copy.deepcopy(case), actx)
            except (api.CheckError, OwnWorkError) as exc:
                got, error = None, str(exc)
                final = bool(getattr(exc, "final", False))
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - SystemExit from learner code too
                if isinstance(exc, Cancelled):
                    raise
                _restore(result, guard)
                laps.lap("runs")
                _crash_if_fatal(exc, result, case.name, t0, watch)
                row.passed, row.message = False, f"{ex.entry} raised {describe(exc, path)}"
                row.seconds = _now() - c0
                result.failed_case = case.name
                return _fail(result, "error", f"{case.name}: {row.message}", t0)
            else:
                error = None
            watch.settle()  # nothing of this case may still be writing when the next allocates
            _restore(result, guard)
            laps.lap("runs")
            changed = _graders_own(guard)
            if changed:
                return _fail(result, "wrong", changed, t0)
            mismatch = (
                None
                if error
                else _ours(
                    f"compare() of {case.name}",
                    ex,
                    functools.partial(compare, want, got, case, actx),
                )
            )
            if mismatch is not None and any(c.gated for c in watch.calls[calls_before:]):
                mismatch.message += f" ({SIDE_STREAM})"
            row.seconds = _now() - c0
            laps.lap("compare")
            why = error or mismatch
            if why is not None:
                _mark(result, row, case.name, why)
            else:
                row.passed = True
            if on_case is not None:
                on_case(i, len(cases), row)
            if final or (first_failure and why is not None):
                break
        bad = [r for r in result.cases if r.passed is False]
        if bad:
            return _fail(result, "wrong", f"{bad[0].name}: {bad[0].message}", t0)
        built = native.loaded() if native is not None else None
        if built:
            return _fail(result, "wrong", built, t0)
        shared = getattr(check, "SHARED_MEMORY", None)
        if shared and watch.shared_memory_used() is False:
            return _fail(result, "wrong", f"your kernel uses no shared memory: {shared}", t0)
        without = watch.call_without_shared_memory() if shared else None
        if without is not None:
            why = (
                f"call {without} of your kernel used no shared memory its code reads or writes "
                "in the launches that start most of its threads (a shared_mem= or a __shared__ "
                "array no instruction touches is none, nor one touched only in a branch no "
                f"thread takes, on the emulator, nor a small launch beside the work): {shared}"
            )
            return _fail(result, "wrong", why, t0)
        lonely = watch.call_sharing_nothing() if shared else None
        if lonely is not None:
            how = (
                "counted as it ran on the emulator"
                if any(la.ran is not None for la in watch.calls[lonely - 1].launches)
                else "read from the compiled code: every shared load reads back its own "
                "thread's store"
            )
            why = (
                f"in call {lonely} (the largest) of your kernel, in the launches that start "
                "most of its threads, no thread read a value another thread put in shared "
                "memory: each read back only its own slot, which saves no global access, and a "
                f"small launch that shares beside them does no work for them ({how}): {shared}"
            )
            return _fail(result, "wrong", why, t0)
        result.verdict, result.grade = PASS, "pass"
        result.message = f"all {len(cases)} input sets correct (seed {seed})"
        for note in actx.notes:  # what this machine could not show: said with the pass
            result.message += f"; {note}"
        if ex.timed:
            spec = _ours("timing()", ex, lambda: check.timing(fn, actx))
            untimed = getattr(check, "untimed", None)
            if spec is None and untimed is not None:
                # Why this machine gives no speed grade (Triton's interpreter on a CPU), said
                # with the verdict so a pass is not read as a graded one
                why = _ours("untimed()", ex, lambda: untimed(actx))
                if why:
                    result.message += f"; {why}"
            if spec is not None:
                yard = None
                if yard_fn is not None:
                    ours = watch.ours(yard_fn)  # timed at the learner's per-call cost
                    yspec = _ours("timing() of the yardstick", ex, lambda: check.timing(ours, actx))
                    yard = YardRun(yard_choice, yspec) if yspec is not None else None
                watch.timing = True
                collector = gc.isenabled()  # the timed calls turn it off around each call
                try:
                    timing = time_and_grade(
                        spec, ex, actx, exp_ctx, guard=guard, laps=laps, yard=yard
                    )
                except YardstickWrong as exc:
                    raise ExerciseBug(f"{ex.id}: {exc}") from None
                except OwnWorkError as exc:
                    _restore(result, guard)
                    return _fail(result, "wrong", f"timed run: {exc}", t0)
                except api.CheckError as exc:  # the check's words already (a rank's failure)
                    _restore(result, guard)
                    return _fail(result, "error", f"timed run: {exc}", t0)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # noqa: BLE001 - the learner's code, at full size
                    if isinstance(exc, Cancelled):
                        raise
                    _restore(result, guard)
                    _crash_if_fatal(exc, result, "timed run", t0, watch)
                    why = f"timed run: {ex.entry} raised {describe(exc, path)}"
                    return _fail(result, "error", why, t0)
                finally:
                    watch.timing = False
                    if collector:  # a call that raised left it off
                        gc.enable()
                result.restored = sorted(set(result.restored) | set(guard.restore()))
                result.timing = timing if "learner" in timing else None
                if timing.get("wrong"):
                    result.verdict, result.grade = FAIL, None
                    return _fail(result, "wrong", f"timed run: {timing['wrong']}", t0)
                result.grade = timing.get("grade") or "pass"
                built = native.loaded() if native is not None else None
                if built:
                    return _fail(result, "wrong", f"timed run: {built}", t0)
        result.restored = sorted(set(result.restored) | guard.changed)
        changed = _graders_own(guard)
        if changed:
            return _fail(result, "wrong", changed, t0)
        result.seconds = _now() - t0
        _rest_as_other(result)
        return result
    finally:
        with contextlib.suppress(Exception):  # a stream that faulted was reported already
            watch.settle()
        watch.uninstall()
        forget(learner)
        forget(yard_module)
        forget(check)


_TRACE: dict[str, Any] = {}


def _kernel_trace(ex: Exercise, check: Any, actx: api.Context) -> Any:
    """The record of the kernels each call ran (gpulab.exercises.kernel_trace), for a kernel
    exercise: the emulator's own where CuPy is the emulator's (gpulab.emulator), CUPTI's on a GPU
    (started once a process), None elsewhere."""
    if not getattr(check, "OWN_KERNEL", False) or "cupy" not in ex.needs:
        return None
    cp = sys.modules.get("cupy")
    fake = getattr(cp, "__gpulab_trace__", None)
    if fake is not None:
        return fake
    if not actx.cupy:
        return None
    if "gpu" not in _TRACE:
        _TRACE["gpu"] = KernelTrace.make()
    return _TRACE["gpu"]


def _native_watch(check: Any, actx: api.Context) -> NativeCode | None:
    """Where a check allows a list of operations (its ALLOW), the shared objects mapped from
    here on (refuse.NativeCode), read after the load and after the calls; else None."""
    allow = getattr(check, "ALLOW", None)
    if allow is None:
        return None
    trusted: tuple[str, ...] = ()
    if "triton" in getattr(allow, "exempt", ()) and actx.gpu:
        # On a GPU, Triton builds a launcher object per kernel into its cache and maps it: the
        # learner's own kernel, and our yardstick's during the timed rounds (not run here: no
        # GPU on the machine this was written on). The interpreter on a CPU builds none, so
        # there the cache is not trusted and an object of the learner's put in it still counts
        trusted = (_triton_cache(),)
    return NativeCode(tuple(t for t in trusted if t))


def _triton_cache() -> str:
    try:
        from triton import knobs  # deferred: Triton loads only in its exercises' checks

        return str(knobs.cache.dir)
    except Exception:  # noqa: BLE001 - an older Triton: its default, or the variable
        home = os.path.join(os.path.expanduser("~"), ".triton", "cache")
        return os.environ.get("TRITON_CACHE_DIR", home)


def _untimed_lead(actx: api.Context) -> Any:
    """The spin the timed calls run behind, for the untimed ones too (on a GPU): a call that
    finds the device idle would know it is not timed."""
    if not (actx.gpu or actx.cupy):
        return None
    return lead_spin("cupy" if actx.cupy else "torch", actx.device_index)


def _cover(check: Any, watch: Watch, yard_fn: Any, case: api.Case, actx: api.Context) -> None:
    """Grow the spin ahead of every call (checked and timed: they must not differ) to cover our
    yardstick's host time, measured on its warm second call on the first case before the
    learner's file is loaded. Under the check's watch a Triton launch took 400 us of host time
    on an H200, twice the spin's default (core.lead): it showed on one side of the rounds only."""
    ours = watch.ours(yard_fn)
    host: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = _now()
        try:
            return ours(*args, **kwargs)
        finally:
            host.append(_now() - t)

    functools.update_wrapper(timed, yard_fn)  # the yardstick's name, for a check that asks
    for _ in range(2):
        check.run(timed, copy.deepcopy(case), actx)
    if isinstance(watch.lead, Spin):
        watch.lead.cover(host[-1])


def _load_yardstick(ex: Exercise) -> tuple[Any, Any, ys.Choice]:
    """(module, entry function, which file) of the exercise's yardstick (gpulab.exercises.
    yardstick): ours, so a file that does not load is a bug of the exercise."""
    choice = ys.choose(ex)
    try:
        module, fn = load_learner(choice.path, f"{ex.id}-yardstick", ex.entry)
    except LearnerError as exc:
        raise ExerciseBug(f"{ex.id}'s yardstick {choice.path.name} failed to load: {exc}") from None
    return module, fn, choice


def _reaching(path: Path, *, refusing: bool, allowing: bool) -> str | None:
    """The source's first name that reaches for the grader (gpulab.exercises.reach), read before
    any input is made; a file that cannot be read is left to the load, which says why."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return reaches_for_the_grader(source, refusing=refusing, allowing=allowing)


def _refusing(rule: Any) -> Any:
    """What a check allows (its ALLOW) or refuses (its REFUSE), as a context around each
    learner call."""
    return lambda: watching(rule)


_compare_arrays = api.compare_arrays  # bound at import, long before any learner's code


def _default_compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return _compare_arrays(want, got)


def _restore(result: CheckResult, guard: Guard) -> None:
    guard.restore()
    guard.hooks_changed()  # between cases: a check's own hook lives inside its run()
    if guard.changed:  # what this restore and the ones after each call put back
        result.restored = sorted(set(result.restored) | guard.changed)


def _graders_own(guard: Guard) -> str:
    """Why the check fails when the learner's code changed the grader's own code (gpulab's
    modules and classes, the check, an interpreter hook), else "". Put back is not enough: a
    red team rebound gpulab.core.rounds.Rounds._one at import (gold from bronze, 1.45x) and the
    emulator's launch record (a library copy passed a kernel exercise)."""
    if not guard.own_changed:
        return ""
    first = sorted(guard.own_changed)[0]
    if first.startswith(("sys.", "threading.")):
        return (
            f"your code left an interpreter hook on ({first}): code it runs around the check's "
            "own calls is outside what the check times and checks (gpulab took it off)"
        )
    return (
        f"your code changed {first}, which the check uses to run, time or verify your code: "
        "the grader's own code is not yours to change (gpulab put it back)"
    )


def _mark(result: CheckResult, row: CaseRow, name: str, why: api.Mismatch | str) -> None:
    row.passed = False
    if isinstance(why, api.Mismatch):
        row.message, row.index, row.expected, row.got = (
            why.message,
            why.index,
            why.expected,
            why.got,
        )
        row.max_error, row.wrong = why.max_error, why.wrong
    else:
        row.message = str(why)
    if result.failed_case is None:
        result.failed_case = name
        result.index, result.expected, result.got = row.index, row.expected, row.got
        result.max_error = row.max_error


def _fail(result: CheckResult, kind: str, message: str, t0: float) -> CheckResult:
    result.verdict, result.kind, result.message, result.grade = FAIL, kind, message, None
    result.seconds = _now() - t0
    _rest_as_other(result)
    return result


def _crash_if_fatal(
    exc: BaseException, result: CheckResult, case: str, t0: float, watch: Watch
) -> None:
    """Raise LearnerCrash when the exception means the process's GPU state is gone or full."""
    kind, message, _ = classify(exc)
    if kind == ev.KIND_ILLEGAL_ADDRESS:
        message = watch.fault_named() or message
    if kind in (ev.KIND_ILLEGAL_ADDRESS, ev.KIND_OOM):
        _fail(result, "crash", f"{case}: {message}", t0)
        result.failed_case = case
        raise LearnerCrash(kind, f"{case}: {message}", result.to_dict()) from None
