"""Loading code fresh, and putting back what the learner's code patched.

Every check loads `check.py` and the learner's file from their current text under a new module
name, so nothing of an earlier check (a module-level cache, a patched function, an old version
of the file) survives into the next one. `Guard` snapshots the namespaces a learner is most likely
to patch (NumPy, torch, builtins, our api) and puts them back after each call into learner code,
before the comparison runs and before the worker serves anything else.
"""

from __future__ import annotations

import _signal
import _thread
import contextlib
import gc
import itertools
import linecache
import operator
import os
import random
import re
import signal
import stat
import sys
import threading
import time
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpulab.core.step_trace import watching_exit
from gpulab.exercises import frames

_counter = itertools.count(1)


class LearnerError(Exception):
    """The learner's code failed (syntax, import, a raise); str() is one line for a person."""

    def __init__(
        self, message: str, cause: BaseException | None = None, *, leftover: bool = False
    ) -> None:
        super().__init__(message)
        self.cause = cause
        # a thread or a process of the file's is still running: the worker that loaded it must
        # not take the next check (a refused file's hogs or server would serve the next one)
        self.leftover = leftover


def fresh_name(prefix: str, ident: str) -> str:
    """A module name never used before in this process, for loading a file by path."""
    return f"_gpulab_{prefix}_{ident.replace('-', '_')}_{next(_counter)}"


def load_text(text: str, path: Path, name: str) -> types.ModuleType:
    """Execute `text` as a new module `name` whose __file__ is `path` (tracebacks show its lines).

    The module is in sys.modules while it is used (dataclasses and pickling look it up there);
    call `forget(module)` when done. Exceptions propagate as they are.
    """
    filename = str(path)
    # Tracebacks read lines through linecache: give it the text we ran, not what is on disk now.
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = compile(text, filename, "exec", dont_inherit=True)
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:  # re-raised: a module that failed to load is not left behind
        sys.modules.pop(name, None)
        raise
    return module


def forget(module: types.ModuleType | None) -> None:
    """Drop `module` from sys.modules so its name can be reused."""
    if module is not None:
        sys.modules.pop(module.__name__, None)


def load_learner(path: Path, ident: str, entry: str) -> tuple[types.ModuleType, Any]:
    """(module, the ENTRY function) from the file's current text, or LearnerError in words."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LearnerError(f"cannot read {path}: {exc.strerror or exc}") from None
    started: list[Any] = []
    intra_op_pool_started()  # its threads are torch's own: up before the file, not counted
    threads = native_threads()
    try:
        with starts_watched(started):
            module = load_text(text, path, fresh_name("learner", ident))
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        raise LearnerError(f"syntax error in {path.name} ({where}): {exc.msg}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a learner's SystemExit is a failed check too
        if INTEROP in started:  # the refusal itself, not caught: say what was refused
            raise LearnerError(_thread_at_import(path, INTEROP), exc) from None
        raise LearnerError(f"importing {path.name} raised {describe(exc, path)}", exc) from None
    # A thread the file leaves running can finish a call's work after the call returns, outside
    # the window the check times, and between the calls it checks (a red team's vector-add
    # deferred 65% of its sum so and was graded gold): no exercise needs one
    started = [t for t in started if isinstance(t, str) or t.is_alive()]
    if PROCESS_START in started:
        forget(module)
        raise LearnerError(
            f"{path.name} started a process when it was loaded ({PROCESS_START}): its work "
            "is outside what the check sees and times; start none",
            leftover=True,
        )
    # torch.jit.fork (from Python or TorchScript) starts torch's inter-op threads in C++: no
    # Thread object, no audit event, and the check's torch modes, which are per thread, never
    # reach them (a red team's tree_sum handed x to a torch.sum served there: gold, no tree)
    if interop_threads(threads, settle=True):
        started.append(INTEROP)
    else:
        # Any other thread started in C while the file loads, by whatever library: a red team's
        # world-size-1 gloo group ran a Future's callback on gloo's own thread, which served
        # torch.sum to every call from there (gold, no tree)
        started += [f"a native thread named {name}" for name in foreign_threads(threads)]
    if started:
        forget(module)
        raise LearnerError(_thread_at_import(path, started[0]), leftover=True)
    fn = getattr(module, entry, None)
    if fn is None:
        forget(module)
        raise LearnerError(
            f"{path.name} does not define {entry}(); the starter shows its signature"
        )
    if not callable(fn):
        forget(module)
        raise LearnerError(f"{entry} in {path.name} is a {type(fn).__name__}, not a function")
    return module, fn


# Libraries whose own threads a file may start by using them at import (torch.compile's
# compile workers when a file warms its compiled function up, say)
_THREADED = ("torch", "triton", "cupy", "numpy")


@contextlib.contextmanager
def starts_watched(started: list[Any]) -> Iterator[None]:
    """Threads started while the block runs whose nearest starter is the learner's own code
    (not a library's frame between), appended to `started`: a `threading.Thread`, or the name
    of the raw `_thread` function, which starts one with no Thread object at all."""
    real = threading.Thread.start
    raw = {n: getattr(_thread, n) for n in _RAW_STARTS if hasattr(_thread, n)}

    def start(thread: threading.Thread) -> None:
        if _started_by_learner(sys._getframe(1)):
            started.append(thread)
        real(thread)

    def raw_start(name: str) -> Any:
        def started_raw(*args: Any, **kwargs: Any) -> Any:
            if _started_by_learner(sys._getframe(1)):
                started.append(f"_thread.{name}")
            return raw[name](*args, **kwargs)

        return started_raw

    # multiprocessing's processes: its spawn and forkserver starts fork in C with no audit event
    # (a red team's vector-add started CPU hogs so, at import, and stopped them during its calls)
    mp_process = sys.modules.get("multiprocessing.process")
    base = getattr(mp_process, "BaseProcess", None)
    real_process: Any = getattr(base, "start", None)

    def process_start(process: Any) -> None:
        if _process_by_learner(sys._getframe(1)):
            started.append(PROCESS_START)
            raise RuntimeError(f"{PROCESS_START} refused: start no process")
        real_process(process)

    # torch.jit.fork from Python ends in torch._C.fork, which runs the function on torch's
    # inter-op threads (started in C++, no Thread object): refused to the learner's import,
    # whether or not the pool already has threads (TorchScript's own fork is seen by the new
    # threads it starts: load_learner)
    torch_c = getattr(sys.modules.get("torch"), "_C", None)
    real_fork: Any = getattr(torch_c, "fork", None)

    def fork(*args: Any, **kwargs: Any) -> Any:
        caller: Any = sys._getframe(1)
        if caller.f_globals.get("__name__") == "torch.jit._async":  # torch.jit.fork itself
            caller = caller.f_back
        if caller is not None and _started_by_learner(caller):
            started.append(INTEROP)
            raise RuntimeError(f"torch.jit.fork refused while your file loads ({INTEROP})")
        return real_fork(*args, **kwargs)

    if real_fork is not None:
        setattr(torch_c, "fork", fork)  # noqa: B010
    setattr(threading.Thread, "start", start)  # noqa: B010 - for the block only
    for name in raw:
        setattr(_thread, name, raw_start(name))
    if base is not None:
        setattr(base, "start", process_start)  # noqa: B010
    try:
        yield
    finally:
        setattr(threading.Thread, "start", real)  # noqa: B010
        for name, fn in raw.items():
            setattr(_thread, name, fn)
        if base is not None:
            setattr(base, "start", real_process)  # noqa: B010
        if real_fork is not None:
            setattr(torch_c, "fork", real_fork)  # noqa: B010


PROCESS_START = "multiprocessing's Process.start"


def _thread_at_import(path: Path, started: Any) -> str:
    return (
        f"{path.name} started a thread when it was loaded ({thread_name(started)}): work it "
        "does beside your function is outside the calls the check times and checks; start none"
    )


INTEROP = "torch's inter-op pool, through torch.jit.fork"
INTEROP_NAME = "PTThreadPool"  # what c10's ThreadPool names its threads (/proc's comm)


_NAMING_S = 0.25  # a new thread names itself once it runs: how long to wait for that
_monotonic, _sleep = time.monotonic, time.sleep  # bound before any learner's file rebinds them


def native_threads() -> dict[int, str]:
    """This process's threads, id -> name (/proc's comm; empty where /proc is not)."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return {}
    out = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/comm", encoding="utf-8") as f:
                out[int(tid)] = f.read().strip()
        except (OSError, ValueError):
            continue  # a thread that ended while the list was read
    return out


# Threads a library starts for itself that run none of the learner's Python: the CUDA driver's
# (when a file is the first to touch the device) and the autograd engine's device threads
_OWN_THREADS = ("cuda", "pt_autograd")


def _inherited_names(now: dict[int, str]) -> set[str]:
    """The names a thread has when it never named itself: a new thread copies its creator's, so
    the main thread's now, and the process's name at its start (the program's file, as the
    kernel cuts it to 15 bytes). Both count because some torch builds rename the main thread
    (pt_main_thread) at import: on an H200 with torch 2.11, threads of pools created from a
    thread that still had the process's name (OpenMP's, 31 of them on 32 cores) were left by
    our own model-to-device, profile-step and first-kernel references
    (bench/results/probe-threads-h200x2.log)."""
    names = {now.get(threading.main_thread().native_id or 0, "")}
    for program in (sys.executable, sys.orig_argv[0] if sys.orig_argv else ""):
        if program:
            names.add(os.path.basename(program)[:15])
    return names


def foreign_threads(before: dict[int, str]) -> list[str]:
    """The names of threads started since `before` that no Python Thread object stands for and no
    library runs for itself: threads started in C, which the check's per-thread torch modes
    never reach. Only named ones count: a thread keeps its creator's name unless it names
    itself, and torch's own pools start unnamed ones as a compile or a thread setting asks
    (compile-fused's reference and model-to-device's right/ started some in a call); gloo's
    and torch's inter-op threads name themselves (_OWN_THREADS: those that run no Python)."""
    python = {t.native_id for t in threading.enumerate()}
    now = native_threads()
    unnamed = _inherited_names(now)
    return sorted(
        name
        for tid, name in now.items()
        if tid not in before
        and tid not in python
        and name not in unnamed
        and not name.startswith(_OWN_THREADS)
    )


_POOL: list[bool] = []  # [True] once torch's intra-op threads have been started here


def intra_op_pool_started() -> None:
    """torch's intra-op (OpenMP) threads start at its first parallel operation: started here, so
    the first file to run one at import is not taken to start them."""
    torch = sys.modules.get("torch")
    if torch is not None and not _POOL:
        torch.ones(1 << 17).add_(1.0)
        _POOL.append(True)


def interop_threads(before: dict[int, str], *, settle: bool = False) -> set[int]:
    """The ids of the threads in torch's inter-op pool started since `before`. A pool thread
    names itself after it starts: with `settle` (just after a fork may have started one), new
    threads are given up to _NAMING_S to do so (only when there are new ones: OpenMP's keep the
    process's name)."""
    deadline = _monotonic() + _NAMING_S
    while True:
        now = native_threads()
        new = set(now) - set(before)
        pool = {t for t in new if now[t] == INTEROP_NAME}
        if pool or not new or not settle or _monotonic() >= deadline:
            return pool
        _sleep(0.005)


def _process_by_learner(frame: Any) -> bool:
    """Whether the learner's code starts this process, no compiler's pool between."""
    ask = frames.classifier()
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(frames.LEARNER):
            return True
        if ask.starter(frame):
            return False
        frame = frame.f_back
    return False


# threading keeps its own reference to these: patching them here touches the learner's calls only
_RAW_STARTS = ("start_new_thread", "start_new", "start_joinable_thread")


def thread_name(started: Any) -> str:
    return started if isinstance(started, str) else started.name


def _started_by_learner(frame: Any) -> bool:
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith(frames.LEARNER):
            return True
        module = sys.modules.get(name)
        own = module is not None and frame.f_globals is getattr(module, "__dict__", None)
        if own and name.split(".")[0] in _THREADED:
            return False
        frame = frame.f_back
    return False


def describe(exc: BaseException, path: Path) -> str:
    """'ValueError: message (line 12 of vector_add.py)': the learner's last line in the traceback."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    what = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == str(path):
            line = frame.lineno
    return f"{what} (line {line} of {path.name})" if line else what


def _device_attributes() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The current device's `cupy.cuda.Device().attributes` and a copy. CuPy keeps that dict
    and hands it out again: a count a learner's file wrote into it (grid-stride's
    wrong/sm-count-raised.py) would stay for every later check in the worker, where our own
    expert sizes its grid from it. None on the emulator, whose dict is new at every read."""
    cp = sys.modules.get("cupy")
    if cp is None or getattr(cp, "__gpulab_fake__", False):
        return []
    try:
        facts = cp.cuda.Device().attributes
    except Exception:  # noqa: BLE001 - no device in this process: nothing to keep
        return []
    return [(facts, dict(facts))] if isinstance(facts, dict) else []


class Guard:
    """Snapshots of module and class namespaces; `restore()` undoes whatever changed in them.

    `classes`: the classes of gpulab's modules too (a rank of a collective exercise, where the
    timing pool's state lives in instances, read through their methods). `extra`: modules loaded
    by path that the check runs (its check.py, our yardstick), their classes, and the code of
    their functions (a function's `__code__` swapped is a rebinding too)."""

    MODULES = (
        "numpy",
        "numpy.testing",
        "builtins",
        "math",
        "random",
        "time",
        "gpulab.exercises.api",
        "gpulab.exercises.fresh",
        "gpulab.exercises.saving",
        "gpulab.core.timing",
        "gpulab.core.rounds",
        "gpulab.core.lead",
        "gpulab.core.step_trace",
        "torch",
        "torch.cuda",
        # what the checks' own steps call (profile-step's slow step): a red team's file
        # rebound F.binary_cross_entropy_with_logits at import to pad the slow step's per-label
        # losses with 400 operators each, so the bound on its own loop (a share of what the
        # slow step spends) let the loop pass
        "torch.nn.functional",
        # what profile-step and compile-fused read: a patch here also outlived the check
        "torch.profiler",
        "torch.autograd.profiler",
        "cupy",
        "cupy.cuda",
        # the driver's answers the checks ask for (kernel_checks.sm_count)
        "cupy.cuda.runtime",
        # numpy's own functions look these up on every call (np.count_nonzero reads
        # numpy._core.multiarray.count_nonzero): rebound there, the comparison's scan found no
        # wrong element in any answer; numpy 1's names are numpy.core's
        "numpy._core.multiarray",
        "numpy._core.numeric",
        "numpy._core.fromnumeric",
        "numpy._core.umath",
        "numpy.core.multiarray",
        "numpy.core.numeric",
        "numpy.core.fromnumeric",
        "numpy.core.umath",
    )

    # gpulab's own modules, every one loaded: a check reads through their functions, private
    # ones too (the comparison's scan, the kernel trace's verdict, the rule a call runs under)
    OWN = ("gpulab.exercises", "gpulab.core", "gpulab.telemetry", "gpulab.emulator")

    def __init__(self, classes: bool = False, extra: tuple[types.ModuleType, ...] = ()) -> None:
        self._saved: list[tuple[Any, dict[str, Any]]] = []
        self._private: set[int] = set()  # ids of the namespaces whose private names count too
        self._code: list[tuple[Any, Any]] = []  # (function, its __code__) of the extra modules
        self._own: set[int] = set()  # ids of the grader's own namespaces: gpulab's, the check's
        self.changed: set[str] = set()  # every name any restore() put back, for the verdict
        # what of it was the grader's own (gpulab's modules and classes, the check, its hooks):
        # never the learner's to change, so a check fails on it, not only puts it back
        self.own_changed: set[str] = set()
        refuse_walks()
        self._hooks = hooks()
        self._speed = speed_settings()
        for name in self.MODULES:
            mod = sys.modules.get(name)
            if mod is not None and not name.startswith(self.OWN):
                self._saved.append((mod, dict(vars(mod))))
        own = [
            mod
            for name, mod in list(sys.modules.items())
            if name.startswith(self.OWN) and mod is not None
        ]
        for mod in [*own, *extra]:
            self._saved.append((mod, dict(vars(mod))))
            self._own.add(id(mod))
        if classes or extra:
            for mod in [*own, *extra]:
                for value in list(vars(mod).values()):
                    if isinstance(value, type) and value.__module__ == mod.__name__:
                        self._saved.append((value, dict(vars(value))))
                        self._private.add(id(value))
                        self._own.add(id(value))
        for mod in extra:
            self.keep_code(*vars(mod).values())
        # the grader's constants (gpulab's, the check's, our yardstick's): data, but the rules a
        # check runs under. A red team set gpulab.exercises.speed.SAMPLE to 0 at import (no input
        # sample compared: tree_sum zeroed its input in timed calls and returned 0, gold), and
        # widened the check's frozen ALLOW with object.__setattr__
        self._constants: list[tuple[Any, tuple[str, ...], tuple[Any, ...]]] = []
        self._frozen: list[tuple[str, Any, tuple[Any, ...]]] = []  # (name, instance, fields)
        for mod in [*own, *extra]:
            held = {k: v for k, v in list(vars(mod).items()) if _constant(k, v)}
            if held:
                self._constants.append((mod, tuple(held), tuple(held.values())))
            self._frozen += [
                (f"{mod.__name__}.{k}", v, f)
                for k, v in held.items()
                if (f := _fields(v)) is not None
            ]
        for obj, _ in self._saved:
            if getattr(obj, "__name__", "").startswith(self.OWN) or obj in extra:
                self._private.add(id(obj))
        torch = sys.modules.get("torch")
        if torch is not None:
            self._saved.append((torch.Tensor, dict(vars(torch.Tensor))))
            event = getattr(getattr(torch, "cuda", None), "Event", None)
            if isinstance(event, type):  # the timer's clock on a GPU
                self._saved.append((event, dict(vars(event))))
            for profiler in ("torch.profiler", "torch.autograd.profiler"):
                cls = getattr(sys.modules.get(profiler), "profile", None)
                if isinstance(cls, type):  # the profile a check reads events from
                    self._saved.append((cls, dict(vars(cls))))
                    self._private.add(id(cls))  # its _parse_kineto_results is what a check reads
        np = sys.modules.get("numpy")
        if np is not None:
            self._saved.append((np.random.Generator, dict(vars(np.random.Generator))))
        # random.Random's methods: a patch there would outlive the check in the worker
        self._saved.append((random.Random, dict(vars(random.Random))))
        self._device_facts = _device_attributes()

    def keep_code(self, *functions: Any) -> None:
        """Watch these functions' code: restore() puts back a `__code__` swapped since."""
        for fn in functions:
            if isinstance(fn, types.FunctionType):
                self._code.append((fn, fn.__code__))

    def hooks_changed(self) -> list[str]:
        """The interpreter hooks set since the snapshot, put back (a check's own hook lives
        inside its run(): ask between cases and after loading, not inside a call)."""
        names = unhook(self._hooks)
        self.changed.update(names)
        self.own_changed.update(names)
        return names

    def speed_changed(self) -> list[str]:
        """The speed settings (speed_settings) changed since the snapshot, put back: asked
        after loading, where a file that slows the process at import would have each call set
        its own speed back first and leave the yardstick the slow one."""
        names = speed_changed(self._speed)
        self.changed.update(names)
        return names

    def restore(self) -> list[str]:
        """Put back every function and class that was rebound or added; returns their names
        ("numpy.allclose", ...). Data is left alone: libraries keep state in module globals
        (torch.cuda._initialized flips on first use) that must move forward, not back."""
        changed: list[str] = []
        own: list[str] = []
        for mod, keys, values in self._constants:
            now = vars(mod)
            if all(map(operator.is_, map(now.get, keys), values)):  # at C speed, as _same
                continue
            for key, value in zip(keys, values, strict=True):
                if now.get(key, _MISSING) is not value:
                    setattr(mod, key, value)
                    changed.append(f"{mod.__name__}.{key}")
                    own.append(changed[-1])
        for name, value, fields in self._frozen:
            if not _same_fields(value, fields):
                changed.append(name)
                own.append(name)
        for fn, code in self._code:
            if fn.__code__ is not code:
                fn.__code__ = code
                changed.append(f"{fn.__qualname__}.__code__")
                own.append(changed[-1])
        for obj, saved in self._saved:
            now = vars(obj)
            if _same(now, saved):
                continue
            label = getattr(obj, "__name__", repr(obj))
            private = id(obj) in self._private
            before = len(changed)
            added = [
                k
                for k, v in now.items()
                if k not in saved and _patchable(k, v, private) and not watching_exit(v)
            ]
            for key in added:
                with contextlib.suppress(AttributeError, TypeError):
                    delattr(obj, key)
                    changed.append(f"{label}.{key}")
            for key, value in saved.items():
                current = now.get(key, _MISSING)
                if current is not value and _library_wrap(current, value):
                    continue  # torch wrapped its own function, lazily, during the check
                if current is not value and watching_exit(current):
                    continue  # the check's own watch on Python's exits, put back as it ends
                if current is not value and (
                    _patchable(key, value, private)
                    or (current is not _MISSING and _patchable(key, current, private))
                ):
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(obj, key, value)
                        changed.append(f"{label}.{key}")
            if id(obj) in self._own and len(changed) > before:
                own += changed[before:]
        for facts, saved_facts in self._device_facts:
            if facts != saved_facts:
                facts.clear()
                facts.update(saved_facts)
                changed.append("cupy.cuda.Device().attributes")
        self.changed.update(changed)
        self.own_changed.update(own)
        return changed


# Hooks Python calls around every function call or line: one set at import or in a call can
# finish the work after the timer read its clock and before the check reads the output (a red
# team deferred three quarters of vector-add to a sys.setprofile hook: 1.9x our reference)
_HOOKS = ("sys.setprofile", "sys.settrace", "threading.setprofile", "threading.settrace")


def hooks() -> tuple[Any, ...]:
    """The interpreter's profile and trace hooks, this thread's and new threads', and
    sys.monitoring's tools where there is one (3.12 on); then the other ways Python code runs
    when nobody called it: the signal handlers, the interval timers that raise signals, and
    the garbage collector's callbacks."""
    monitoring = getattr(sys, "monitoring", None)
    tools = tuple(monitoring.get_tool(i) for i in range(6)) if monitoring else ()
    return (
        sys.getprofile(),
        sys.gettrace(),
        threading.getprofile(),
        threading.gettrace(),
        tools,
        tuple(map(_getsignal, _SIGNALS)),
        tuple(map(_getitimer, _TIMERS)),
        tuple(gc.callbacks),
        gc.isenabled(),
        gc.get_threshold(),
    )


# A handler of an interval timer's signal, or a collector's callback, runs between two
# bytecodes of whatever runs next: a red team's handler polled until the check's watch was off,
# then let torch's addcmul write the output of triton-affine-clamp before the check read it
_SIGNALS = tuple(s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))
# The C module's readers, bound at import, before any learner code: signal.getsignal wraps its
# answer in an enum (about 0.35 us a signal, 20 us for all of them after every call), and a
# rebinding of the module's names cannot blind these
_getsignal = _signal.getsignal
_getitimer = _signal.getitimer
_TIMERS = tuple(
    getattr(signal, t)
    for t in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
    if hasattr(signal, t)
)


# Handlers a library installs on first use, each calling the handler it replaced: torch's
# DataLoader sets one for SIGCHLD the first time it starts worker processes (a correct
# model-to-device feeding its batches through a loader with workers was refused for it)
_LIBRARY_HANDLERS = ("torch.utils.data._utils.signal_handling",)


def _chains_to(handler: Any, was: Any) -> bool:
    """Whether `handler` is a library's that only adds to `was`: defined in one of
    _LIBRARY_HANDLERS, and every function it closes over is `was` itself (a handler of the
    learner's installed first, then chained by the library, is a change like any other)."""
    if getattr(handler, "__module__", None) not in _LIBRARY_HANDLERS:
        return False
    held = []
    for cell in getattr(handler, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell holds nothing
            held.append(cell.cell_contents)
    return all(h is was for h in held if callable(h))


def unhook(saved: tuple[Any, ...]) -> list[str]:
    """Put the hooks back as `saved` holds them; the names of those that had changed."""
    now = hooks()
    names = [name for name, a, b in zip(_HOOKS, now[:4], saved[:4], strict=True) if a is not b]
    if names:
        sys.setprofile(saved[0])
        sys.settrace(saved[1])
        threading.setprofile(saved[2])
        threading.settrace(saved[3])
    monitoring = getattr(sys, "monitoring", None)
    if monitoring and now[4] != saved[4]:
        names.append("sys.monitoring")
        for i, was in enumerate(saved[4]):
            if was is None and monitoring.get_tool(i) is not None:
                monitoring.set_events(i, 0)
                monitoring.free_tool_id(i)
    # Timers first: a handler put back to the default before its timer stops lets the next
    # tick end the process (SIGALRM's default action; a red team's 10 us timer crashed a test
    # process this way under load)
    stopped = []
    for timer, was, ticking in zip(_TIMERS, saved[6], now[6], strict=True):
        if ticking != was and was == (0.0, 0.0):
            stopped.append("signal.setitimer")  # named after the handlers: the handler says more
            signal.setitimer(timer, 0)
    # the loop only where a handler changed: this runs after every timed call, inside the
    # timed window, as around the yardstick's
    changed = any(map(operator.is_not, now[5], saved[5]))
    for sig, was, handler in zip(_SIGNALS, saved[5], now[5], strict=True) if changed else ():
        if handler is not was and not _chains_to(handler, was):
            names.append(f"a handler of {signal.Signals(sig).name}")
            with contextlib.suppress(ValueError, OSError, TypeError):  # not the main thread
                signal.signal(sig, was)
    names += stopped
    if len(now[7]) != len(saved[7]) or any(map(operator.is_not, now[7], saved[7])):
        names.append("gc.callbacks")
        gc.callbacks[:] = saved[7]
    if now[8] != saved[8]:
        names.append("gc.enable" if now[8] else "gc.disable")
        (gc.enable if saved[8] else gc.disable)()
    if now[9] != saved[9]:
        names.append("gc.set_threshold")
        gc.set_threshold(*saved[9])
    return names


# The interpreter's ways to list its objects and every thread's frames, and to take a frame (a
# caller's locals are one f_back away from any frame). The source scan names them
# (gpulab.exercises.reach), but a name built at run time passes it: a red team's tree_sum found
# the timer's _CallChecks through getattr(gc, "get_" + "objects"), another through
# inspect.currentframe reached by importlib and getattr, then emptied the input sample the timer
# was about to compare, zeroed its input and returned 0 (gold, no work done). Python's audit
# events see these calls however the function was reached
# (and the interpreter's hooks, whose callback is handed every frame: a red team's tree_sum set
# sys.setprofile for one call of its own, took the frame and walked up to the timer's record)
_WALKS = frozenset(
    (
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._current_frames",
        "sys.setprofile",
        "sys.settrace",
    )
)
_FRAME_ATTRS = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame"))
# Processes the learner's code starts or signals: a red team's tree_sum forked a NumPy child at
# import that summed a shared file the call copied x into (gold, no tree), and another forked
# CPU hogs it stopped on entering each call and let run on returning, so they slowed only the
# yardstick's rounds (bronze work graded gold). Work belongs in the call, in this process
_PROCESSES = frozenset(
    (
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.system",
        "subprocess.Popen",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
    )
)
# ctypes' ways to memory by its address. The source scan refuses the module by name
# (gpulab.exercises.reach), but a name built at run time passes it: a red team's tree_sum took
# ctypes through importlib, a tensor's C struct through getattr(x, "_c" + "data"), followed its
# storage's pointer with from_address and summed the floats with NumPy (gold, no tree). Python's
# audit events see these however they were reached. Refused where the learner's own code (or
# NumPy's ctypeslib, acting for it) asks: a library's own use, the emulator's compiled launches
# among them, goes through its own frames and is left alone
_CTYPES = frozenset(
    (
        "ctypes.cdata",
        "ctypes.cdata/buffer",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.call_function",
        "ctypes.addressof",
    )
)
# The words of a line that asks a frame giver for a frame itself (torch.fx's
# `inspect.currentframe()`); heapq.nsmallest resuming traceback.walk_stack for a red team's
# tree_sum named none of them, and handed the frames back (gold, no work)
_GIVER_WORDS = ("currentframe", "stack(", "trace(", "walk_stack", "walk_tb", "get_stack")
_walks_refused: list[bool] = []


class WalkRefused(RuntimeError):
    """The learner's code listed the interpreter's objects or took a frame (refuse_walks)."""


def _frame_givers() -> frozenset[Any]:
    """The code of the standard library's functions that hand their caller a frame."""
    import asyncio.base_tasks  # deferred: as inspect
    import inspect  # deferred: needed only where checks run, by the first Guard
    import logging  # deferred: as inspect

    found = [
        inspect.currentframe,
        inspect.stack,
        inspect.trace,
        traceback.walk_stack,
        traceback.walk_tb,
        logging.currentframe,
        # a task's get_stack(): a red team's coroutine took its own frame there, walked up
        asyncio.base_tasks._task_get_stack,
    ]
    return frozenset(f.__code__ for f in found if isinstance(f, types.FunctionType))


def _logging_giver() -> Any:
    import logging  # deferred: as inspect

    f = logging.currentframe
    return f.__code__ if isinstance(f, types.FunctionType) else None


def _how(what: str) -> str:
    if what in _CTYPES:
        return f"which {_MEMORY}; leave it out"
    if what in _PROCESSES:
        return (
            "which starts or signals another process, whose work the check cannot see or "
            "time; do the work in your function, in this process"
        )
    if what.startswith("gc."):
        why = "which lists the interpreter's objects"
    elif what in ("sys.setprofile", "sys.settrace"):
        why = "whose callback is handed every frame, one step from the callers' locals"
    else:
        why = "which hands you a frame, one step from the callers' locals"
    return f"{why}: the grader's references live there; leave it out"


# A thread's name in /proc (its comm) is how the grader tells a thread started in C from torch's
# own unnamed pools: a red team renamed gloo's serving thread to the process's name
_COMM = re.compile(r"^/proc/(self|thread-self|\d+)/(task/\d+/)?comm$")
_RENAMES = "a thread's name is how the check tells whose thread it is; leave it as it is"


def _renames_a_thread(args: tuple) -> bool:
    """Whether an audited open() writes a thread's name (/proc/.../comm)."""
    path, mode = args[0], args[1] if len(args) > 1 else None
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if not isinstance(path, str) or not path.endswith("comm") or not _COMM.match(path):
        return False
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    writes = isinstance(mode, str) and any(c in mode for c in "wax+")
    return writes or bool(flags & (os.O_WRONLY | os.O_RDWR))


# Any byte of this process by its address, read and written with plain file calls: a red team's
# triton-matmul read a and b at data_ptr() through /proc/self/mem (os.pread), let NumPy multiply
# them and wrote out back (os.pwrite), beside a kernel that stored nothing. Named however the
# path reaches it: /proc/<pid>/mem, a symlink, /dev/fd/../mem, or a directory of /proc handed
# to a later open as dir_fd (whose relative name the event carries alone)
_PROC_PID = re.compile(r"^/proc/(\d+)(/task/\d+)?(/.*)?$")
_MEMORY = "reads or writes this process's memory by its address, past every watch the check keeps"


def _resolved(path: str, lstat: Any, readlink: Any, getcwd: Any, islink: Any) -> str:
    """`path` with every symlink followed, as the kernel would (".." after the link it follows);
    a component that does not exist ends the walk, the rest kept as written."""
    parts = path.split("/")
    done = "" if path.startswith("/") else getcwd().rstrip("/")
    hops = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            done = done.rsplit("/", 1)[0]
            continue
        here = f"{done}/{part}"
        try:
            mode = lstat(here).st_mode
        except (OSError, ValueError):
            return "/".join([here, *parts])
        if islink(mode) and hops < 40:
            hops += 1
            target = readlink(here)
            parts = target.split("/") + parts
            if target.startswith("/"):
                done = ""
            continue
        done = here
    return done or "/"


def _reaches_memory(path: Any, lstat: Any, readlink: Any, getcwd: Any, islink: Any) -> bool:
    """Whether an open (or a symlink's target) of the learner's reaches this process's memory
    file, or a directory of /proc a dir_fd open could reach it from."""
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if not isinstance(path, str) or not path:
        return False
    if not path.startswith("/") and path.rstrip("/").rsplit("/", 1)[-1] == "mem":
        return True  # relative to a directory we cannot see (dir_fd): the name is enough
    real = _resolved(path, lstat, readlink, getcwd, islink)
    if real == "/proc":
        return True
    m = _PROC_PID.match(real)
    if m is None:
        return False
    rest = m.group(3) or ""
    return rest in ("", "/mem", "/task", "/fd") or rest.startswith(("/mem/", "/task/"))


def _linked(event: str, args: tuple) -> Any:
    """The path an audited open names, or where a new symlink points (a relative target read
    from the link's own folder, as the kernel reads it)."""
    path = args[0]
    if event == "os.symlink" and len(args) > 1 and isinstance(path, str | bytes):
        src, dst = os.fsdecode(path), args[1]
        if isinstance(dst, str | bytes) and not src.startswith("/"):
            dst = os.fsdecode(dst)
            if dst.startswith("/"):
                return f"{dst.rsplit('/', 1)[0]}/{src}"
        return src
    return path


def refuse_walks() -> None:
    """From now on in this process (an audit hook cannot be taken off), refuse what the learner's
    code asks for of the calls in _WALKS (the hooks too: their callbacks are handed frames, and
    a library's tracer subclassed hands them on), and of frames (sys._getframe, a traceback's, a
    generator's or coroutine's frame), directly or through a standard function that hands its
    caller one (inspect.currentframe, traceback.walk_stack, ...). The learner's: a frame of a
    learner's module, or code that is not its module's own (exec'd under a borrowed name), and for
    the walks any such frame on the stack (a finalizer of the learner's can run with none above
    it). A library's own walks and frames, and the grader's, are left alone. Everything the hook
    reads is bound here: rebinding a module's names cannot blind it."""
    if _walks_refused:
        return
    _walks_refused.append(True)
    getframe, ident = sys._getframe, _thread.get_ident
    walks, attrs, givers = _WALKS, _FRAME_ATTRS, _frame_givers()
    processes, logging_giver, by_address = _PROCESSES, _logging_giver(), _CTYPES
    learners, _, deciding, any_learner, names, starter = frames.classifier()
    giver_words = _GIVER_WORDS
    reaches, linked = _reaches_memory, _linked
    memory_io = (os.lstat, os.readlink, os.getcwd, stat.S_ISLNK)
    busy: set[int] = set()  # the hook's own sys._getframe raises the event again

    def asked(what: str) -> bool:
        caller = getframe(2)  # 0: this, 1: the hook, 2: who called the audited function
        if what in walks:
            return learners(caller) or any_learner(caller)
        if what in by_address or what in processes:
            # whose behalf: the first frame past the standard library and the relays (ctypes'
            # own cast and string_at are Python functions that call the C ones); a compiler's
            # own pool starts, one that calls what it was handed does not; of ctypes, only
            # NumPy's ctypeslib acts for the learner (a library's own use, the emulator's
            # compiled launches among them, is its own)
            decider = deciding(caller)
            if decider is None:
                return False
            if learners(decider):
                return True
            if what in by_address:
                module = str(decider.f_globals.get("__name__", ""))
                return module.startswith("numpy.") and any_learner(decider)
            return not starter(decider) and any_learner(decider)
        if learners(caller):
            return True
        if caller.f_code is logging_giver:  # a log record's caller line: logging's own use
            return learners(caller.f_back)
        if caller.f_code in givers:
            taker = caller.f_back  # who asked the giver (or resumed it)
            if taker is None or names(taker, giver_words):
                return False
            return learners(taker) or any_learner(taker)
        # a frame taken for the code's own use names it on its line (namedtuple's module name,
        # dynamo's frame); a function handed sys._getframe and called does not
        if names(caller, ("_getframe", "getframe(") if what == "sys._getframe" else (what,)):
            return False
        return any_learner(caller)

    def hook(event: str, args: Any) -> None:
        if event in walks or event in processes or event in by_address or event == "sys._getframe":
            what = event
        elif event == "object.__getattr__" and len(args) == 2 and args[1] in attrs:
            what = str(args[1])
        elif event == "open" and args and _renames_a_thread(args):
            if learners(getframe(1)) or any_learner(getframe(1)):
                raise WalkRefused(f"your code opened {args[0]!s} to write: {_RENAMES}")
            return
        elif event in ("open", "os.symlink") and args and reaches(linked(event, args), *memory_io):
            if learners(getframe(1)) or any_learner(getframe(1)):
                verb = "opened" if event == "open" else "made a link to"
                raise WalkRefused(f"your code {verb} {args[0]!s}, which {_MEMORY}")
            return
        else:
            return
        me = ident()
        if me in busy:
            return
        busy.add(me)
        try:
            refused = asked(what)
        finally:
            busy.discard(me)
        if refused:
            raise WalkRefused(f"your code asked for {what}, {_how(what)}")

    sys.addaudithook(hook)


# Process-wide settings that set how fast the next code runs, whoever's it is. A red team's
# tree_sum set torch's thread count back to the machine's at the start of each call and to 1 as
# it returned: every yardstick round, timed beside its own, ran on one thread (bronze work graded
# silver on 2 cores; on 8 it is gold). What a call changes must be as it found it when it returns
_os_affinity = getattr(os, "sched_getaffinity", None)
_os_set_affinity = getattr(os, "sched_setaffinity", None)
# torch.backends flags whose change slows what runs after (never a precision choice)
_BACKEND_FLAGS = (("cudnn", "enabled"), ("mkldnn", "enabled"))


# Process-wide hooks torch runs on every module, optimizer or saved tensor, whoever's: a red
# team's mixed-precision step took its global module forward pre-hook (which slept) off as each
# call began and put it back as the call returned, so only the yardstick's rounds ran it (a step
# 2.5 times our reference's time graded gold, 1.2x). The registries, anomaly mode and
# deterministic mode count as speed settings; the saved-tensor hooks are compared by the top of
# their stack.
_GLOBAL_HOOKS = (
    (
        "torch.nn.modules.module",
        (
            "_global_forward_pre_hooks",
            "_global_forward_hooks",
            "_global_forward_hooks_always_called",
            "_global_forward_hooks_with_kwargs",
            "_global_backward_pre_hooks",
            "_global_backward_hooks",
            "_global_module_registration_hooks",
            "_global_parameter_registration_hooks",
            "_global_buffer_registration_hooks",
        ),
    ),
    ("torch.optim.optimizer", ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks")),
)
_ANOMALY = "torch.autograd.set_detect_anomaly"
# Deterministic mode fills every new tensor with NaN (fill_uninitialized_memory): our
# mixed-precision step ran 1.4x slower under it, a tree_sum's levels 2.4x
_DETERMINISTIC = "torch.use_deterministic_algorithms"
_SAVED_HOOKS = "torch.autograd.graph.saved_tensors_hooks"


class _Registry(tuple):  # a registry's (key, hook) pairs
    """A global hook registry's items as a snapshot: compared by value, shown by its size."""


def _torch_hooks(torch: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for module_name, names in _GLOBAL_HOOKS:
        module = sys.modules.get(module_name)
        for name in names:
            registry = getattr(module, name, None)
            if isinstance(registry, dict):
                out.append((f"{module_name}.{name}", _Registry(registry.items())))
    with contextlib.suppress(Exception):  # a torch without these readers: nothing to compare
        out.append((_ANOMALY, (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())))
    with contextlib.suppress(Exception):  # as above
        mode = torch.are_deterministic_algorithms_enabled()
        out.append((_DETERMINISTIC, (mode, torch.is_deterministic_algorithms_warn_only_enabled())))
    top = getattr(getattr(torch._C, "_autograd", None), "_top_saved_tensors_default_hooks", None)
    if top is not None:
        with contextlib.suppress(Exception):  # as above
            out.append((_SAVED_HOOKS, top(False)))
    return out


def _put_back_hooks(name: str, was: Any) -> None:
    torch = sys.modules["torch"]
    if name == _ANOMALY:
        torch._C._set_anomaly_enabled(*was)
    elif name == _DETERMINISTIC:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
    elif name == _SAVED_HOOKS:
        autograd = torch._C._autograd
        for _ in range(64):  # the stack's hooks pushed since, popped back to the saved top
            if autograd._top_saved_tensors_default_hooks(False) == was:
                break
            autograd._pop_saved_tensors_default_hooks()
    else:
        module_name, attr = name.rsplit(".", 1)
        registry = getattr(sys.modules[module_name], attr)
        registry.clear()
        registry.update(was)


def speed_settings() -> tuple[tuple[str, Any], ...]:
    """(name, value) of each setting above, as the process holds it now."""
    out: list[tuple[str, Any]] = []
    torch = sys.modules.get("torch")
    if torch is not None:
        out.append(("torch.set_num_threads", torch.get_num_threads()))
        backends = getattr(torch, "backends", None)
        for module, flag in _BACKEND_FLAGS:
            held = getattr(backends, module, None)
            if held is not None and hasattr(held, flag):
                out.append((f"torch.backends.{module}.{flag}", getattr(held, flag)))
        out += _torch_hooks(torch)
    if _os_affinity is not None:
        with contextlib.suppress(OSError):
            out.append(("os.sched_setaffinity", frozenset(_os_affinity(0))))
    return tuple(out)


def speed_changed(saved: tuple[tuple[str, Any], ...]) -> list[str]:
    """Put each setting back as `saved` holds it; "name (was -> now)" for each that changed."""
    now = dict(speed_settings())
    changed = []
    for name, was in saved:
        if name not in now or now[name] == was:
            continue
        changed.append(f"{name} ({_shown(was)} -> {_shown(now[name])})")
        with contextlib.suppress(Exception):  # put back as far as it can be
            if name == "torch.set_num_threads":
                sys.modules["torch"].set_num_threads(was)
            elif name == "os.sched_setaffinity" and _os_set_affinity is not None:
                _os_set_affinity(0, was)
            elif not name.startswith("torch.backends."):
                _put_back_hooks(name, was)
            else:
                _, module, flag = name.rsplit(".", 2)
                setattr(getattr(sys.modules["torch"].backends, module), flag, was)
    return changed


def _shown(value: Any) -> str:
    if isinstance(value, frozenset):
        return f"{len(value)} CPUs"
    if isinstance(value, _Registry):
        return f"{len(value)} hook(s)"
    if isinstance(value, tuple) and value and callable(value[0]):
        return "a pack and unpack hook"
    if isinstance(value, tuple) and value and isinstance(value[0], bool):
        return repr(value[0])  # the mode; the second flag (check_nan, warn_only) rides along
    return repr(value)


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The garbage collector off for the block: from a call into the learner's code until the
    check has read what it wrote. A finalizer (__del__, weakref.finalize) on an object in a
    reference cycle runs at the collector's next pass, between two bytecodes of whatever runs
    then; one that made another like itself while the watch was on polled until it was off,
    and a red team's let torch write triton-affine-clamp's output before the check read it.
    Whatever the block made is collected once it ends, when the reading is done."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_MISSING = object()
_IMMUTABLE = (int, float, complex, str, bytes, tuple, frozenset, range)


def _constant(key: str, value: Any) -> bool:
    """A module's constant: an UPPER_CASE name (a leading underscore allowed) bound to an
    immutable value or a frozen dataclass instance. The grader never rebinds one (its state
    that moves, such as a count of open blocks or a cache, has a lower-case name or a mutable
    value)."""
    bare = key.lstrip("_")
    if not bare or not bare[0].isalpha() or bare.upper() != bare or key.startswith("__"):
        return False
    return isinstance(value, _IMMUTABLE) or _fields(value) is not None


def _fields(value: Any) -> tuple[Any, ...] | None:
    """A frozen dataclass instance's field values, in order; None for anything else."""
    params = getattr(type(value), "__dataclass_params__", None)
    if params is None or not params.frozen or isinstance(value, type):
        return None
    return tuple(getattr(value, f) for f in type(value).__dataclass_fields__)


def _same_fields(value: Any, fields: tuple[Any, ...]) -> bool:
    """Whether a frozen instance still holds `fields` (by identity); put back where not."""
    now = _fields(value) or ()
    if len(now) == len(fields) and all(map(operator.is_, now, fields)):
        return True
    for name, was in zip(type(value).__dataclass_fields__, fields, strict=False):
        object.__setattr__(value, name, was)
    return False


def _same(now: Any, saved: dict[str, Any]) -> bool:
    """Whether a namespace holds exactly the objects that were saved (by identity: an object
    whose __eq__ says yes to anything is still a change), at C speed. Restores run after every
    guarded call, and the loop below over torch's and numpy's thousands of names was a quarter
    of a repeat check; an untouched namespace now costs one pass in C."""
    return (
        len(now) == len(saved)
        and all(map(operator.is_, now, saved))  # the same names in the same order
        and all(map(operator.is_, now.values(), saved.values()))
    )


def _library_wrap(new: Any, old: Any) -> bool:
    """Whether `new` is torch's own lazy wrapper of `old`: the first call of some torch functions
    imports torch._dynamo, which rebinds torch.manual_seed (and friends) to a `_disable_dynamo`
    wrapper of itself. That happens inside a learner's call without the learner doing it."""
    code = getattr(new, "__code__", None)
    return (
        getattr(new, "__wrapped__", None) is old
        and code is not None
        and code.co_filename.replace("\\", "/").endswith("torch/_compile.py")
    )


def _patchable(key: str, value: Any, private: bool = False) -> bool:
    """A public function or class: what a check or the timer calls (in gpulab's own modules and
    the profiler's class, private ones too). Not a submodule imported since (numpy.linalg,
    torch.fx: legitimate newcomers), not state, not data."""
    if isinstance(value, types.ModuleType):
        return False
    if key.startswith("_") and not key.startswith("__") and not private:
        return False
    # a descriptor too: a property put on a class wins over every instance's attribute (a red
    # team made Watch.require_kernel a property that reads False)
    descriptor = isinstance(value, property | classmethod | staticmethod)
    return (callable(value) or descriptor) and key not in ("__dict__", "__weakref__")
