"""Inside a rank of a collective exercise, the rules of the learner's call.

`watching(path)`: the learner writes a collective from point-to-point messages, so the library's
own collectives are refused inside their call, and every request of an isend or irecv must be
waited on before the call returns.

`watching_hook(path)`: the learner's DDP communication hook must start its all-reduce and return
at once: a wait inside the hook (a request's `wait()`, a blocking collective, which waits for
itself, a pending future's `wait()` or `value()`, a device synchronize) stops the backward pass
there, so nothing overlaps the communication; and every collective it starts must be handed
back as a future (`get_future()`), or DDP never waits for it.

Installed once per rank (`install`), before the learner's file is loaded, so a name the file
binds at import (`from torch.distributed import all_reduce`) is already the guarded one. The
collectives are guarded on `ProcessGroup` itself, which every `torch.distributed` collective and
any direct `group.allreduce(...)` go through, and in `torch.distributed._functional_collectives`.
Outside a learner's call (`watching`) they pass through: the check's own code (the library's
figure it times beside the learner's, its reference) uses them.

What a call did wrong is recorded with the learner's line, and `watching` raises the first
record (`Refused`, one line) when the call returns, so a learner's `except Exception` around it
changes nothing. A refused collective is also raised where it happens; a hook's wait is only
recorded (raised inside DDP's backward, it would leave its peers waiting).

On gloo a lone isend or irecv is completed where it is posted, as NCCL would run it (`_in_order`).

Why the wait rule: a request not waited on may still be in flight when the function returns
(with NCCL, queued on its own stream; with gloo, half sent), and the buffer it reads or writes
is handed back to the caller, who overwrites it. `Work.is_completed()` is no substitute: gloo
marks an isend completed lazily, after its peer has long received it.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.abc
import importlib.util
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# ProcessGroup's collectives (torch.distributed.all_reduce and the rest call these): the words a
# learner reads name the torch.distributed function they most likely called
_GROUP_COLLECTIVES = {
    "allreduce": "all-reduce",
    "allreduce_coalesced": "all-reduce",
    "allgather": "all-gather",
    "_allgather_base": "all-gather",
    "allgather_coalesced": "all-gather",
    "allgather_into_tensor_coalesced": "all-gather",
    "all_gather_single": "all-gather",
    "all_gather_single_coalesced": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "_reduce_scatter_base": "reduce-scatter",
    "reduce_scatter_single": "reduce-scatter",
    "reduce_scatter_single_coalesced": "reduce-scatter",
    "reduce_scatter_tensor_coalesced": "reduce-scatter",
    "reduce": "reduce",
    "broadcast": "broadcast",
    "gather": "gather",
    "scatter": "scatter",
    "alltoall": "all-to-all",
    "alltoall_base": "all-to-all",
    "all_to_all_single": "all-to-all",
}
_FUNCTIONAL = {
    "all_reduce": "all-reduce",
    "all_reduce_inplace": "all-reduce",
    "all_gather_tensor": "all-gather",
    "all_gather_into_tensor_coalesced": "all-gather",
    "reduce_scatter_tensor": "reduce-scatter",
    "reduce_scatter_tensor_coalesced": "reduce-scatter",
    "all_to_all_single": "all-to-all",
    "broadcast": "broadcast",
}
_P2P = ("isend", "irecv", "batch_isend_irecv")

WHY = "it does the whole collective in one call; build it from send and recv (isend/irecv)"


class Refused(RuntimeError):
    """A call the exercise does not allow, or a request left unwaited; str() is one line."""


class LearnerFailed(RuntimeError):
    """The learner's code raised in a rank; str() is one line with the learner's line number."""


P2P, HOOK = "p2p", "hook"
SETTLE_S = 20.0  # the longest a request left unwaited is waited on for, after the call


class _State:
    def __init__(self) -> None:
        self.installed = False
        self.active = False
        self.mode = P2P
        self.path = ""  # the learner's file, for the line numbers
        self.found: list[str] = []
        self.requests: list[tuple[Any, str, str]] = []  # (work, which call, where)
        self.waited: set[int] = set()
        self.depth = 0
        self.complete: Any = None  # Work.wait as torch has it: completes a request unrecorded
        # ids of the requests completed where they were posted: gloo's wait on a receive
        # consumes a message, so a second wait on one would wait for the next
        self.completed: set[int] = set()


_STATE = _State()


def _frame() -> Any:
    """The innermost frame of the learner's file on the stack, or None."""
    found = None
    if _STATE.path:
        for frame in traceback.extract_stack():
            if frame.filename == _STATE.path:
                found = frame
    return found


def _where() -> str:
    """' (line N of file.py)' for the learner's innermost line, or ''."""
    frame = _frame()
    return f" (line {frame.lineno} of {Path(_STATE.path).name})" if frame else ""


def _call() -> str:
    """': `the line` (line N of file.py)' for the learner's innermost line, or ''."""
    frame = _frame()
    return f": `{frame.line}`{_where()}" if frame and frame.line else ""


def _refuse(kind: str) -> None:
    message = f"the library's {kind} is not allowed here{_call()}; {WHY}"
    _STATE.found.append(message)
    raise Refused(message)


def _waits(what: str) -> None:
    """A hook waited: recorded (see the module doc)."""
    _STATE.found.append(
        f"your hook waits for {what}{_call()}: the backward pass stops there until it ends, so "
        "no computation overlaps it. Start the all-reduce with async_op=True and return its "
        "future (work.get_future(), with .then() for what comes after): DDP waits for it once "
        "the backward pass is done"
    )


def _guard_group(cls: Any, method: str, kind: str) -> None:
    real = getattr(cls, method)

    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _STATE.active:
            return real(self, *args, **kwargs)
        if _STATE.mode == P2P:
            _refuse(kind)
        work = real(self, *args, **kwargs)
        if work is not None:
            _STATE.requests.append((work, f"the {kind}", _where()))
        return work

    setattr(cls, method, guarded)


def _guard_module(module: Any, name: str, kind: str) -> None:
    real = getattr(module, name)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _STATE.active:
            _refuse(kind)
        return real(*args, **kwargs)

    setattr(module, name, guarded)


_FUNCTIONAL_MODULE = "torch.distributed._functional_collectives"


def _guard_functional(module: Any) -> None:
    for name, kind in _FUNCTIONAL.items():
        if hasattr(module, name):
            _guard_module(module, name, kind)


class _GuardOnImport(importlib.abc.MetaPathFinder):
    """Guards the functional collectives once they are imported (see install)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _FUNCTIONAL_MODULE:
            return None
        sys.meta_path.remove(self)  # one module, once; the real finders find it
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            real(module)
            _guard_functional(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # this module's loader only
        return spec


def _track(modules: tuple[Any, ...], name: str) -> None:
    real = getattr(modules[0], name)

    def tracked(*args: Any, **kwargs: Any) -> Any:
        # Only the outermost call's requests are the learner's: batch_isend_irecv calls isend
        # and irecv inside, and hands back the requests to wait on itself
        _STATE.depth += 1
        try:
            out = real(*args, **kwargs)
        finally:
            _STATE.depth -= 1
        if _STATE.active and _STATE.depth == 0:
            where = _where()
            for work in out if isinstance(out, list) else [out]:
                if work is not None:
                    _STATE.requests.append((work, f"the request of an {name}", where))
            if name != "batch_isend_irecv" and _in_order():
                _complete(out)
        return out

    # One object under every name: P2POp checks its op is torch.distributed's isend or irecv
    for module in modules:
        setattr(module, name, tracked)


def _in_order() -> bool:
    """Whether a lone isend or irecv is completed where it is posted (gloo). NCCL runs a rank's
    sends and receives in order on one stream (eager initialization, which the checks use), so
    an isend posted alone is a send first: every rank sending first deadlocks there, where gloo
    would let the pair through. Completing each lone request as it is posted gives gloo NCCL's
    order, so code that stops on a GPU box stops on a laptop too, with the same message; a
    group (batch_isend_irecv) starts its operations together on both."""
    import torch.distributed as dist

    return dist.is_initialized() and dist.get_backend() == "gloo"


def _complete(out: Any) -> None:
    for work in out if isinstance(out, list) else [out]:
        if work is not None:
            _STATE.complete(work)  # not the learner's wait: the wait rule still counts theirs
            _STATE.completed.add(id(work))


def install() -> None:
    """Guard this process's torch.distributed (once; a rank is a process of its own)."""
    if _STATE.installed:
        return
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    group_cls = c10d.ProcessGroup
    for method, kind in _GROUP_COLLECTIVES.items():
        if hasattr(group_cls, method):
            _guard_group(group_cls, method, kind)
    # The functional collectives take a second to import in a rank on a busy 2-core box: they
    # are guarded when something imports them, if nothing has yet
    if _FUNCTIONAL_MODULE in sys.modules:
        _guard_functional(sys.modules[_FUNCTIONAL_MODULE])
    else:
        sys.meta_path.insert(0, _GuardOnImport())
    for name in _P2P:
        _track((c10d, dist), name)
    work_cls = c10d.Work
    real_wait = work_cls.wait
    _STATE.complete = real_wait

    def wait(self: Any, *args: Any, **kwargs: Any) -> Any:
        _STATE.waited.add(id(self))
        if _STATE.active and _STATE.mode == HOOK:
            what = next((k for w, k, _ in _STATE.requests if w is self), "its communication")
            _waits(what.removeprefix("the request of an ").replace("the ", "its ", 1))
        if id(self) in _STATE.completed:
            return True
        return real_wait(self, *args, **kwargs)

    setattr(work_cls, "wait", wait)  # noqa: B010 - a class of torch's, patched in a rank
    real_future = work_cls.get_future

    def get_future(self: Any) -> Any:
        # A request handed on as a future is waited on through it (chained with then(), or
        # waited by the code that holds it): it counts as waited
        _STATE.waited.add(id(self))
        return real_future(self)

    setattr(work_cls, "get_future", get_future)  # noqa: B010
    _guard_waits()
    _STATE.installed = True


def _guard_waits() -> None:
    """A pending future's wait() or value(), or a device synchronize, inside a hook."""
    import torch
    import torch.futures

    future_cls = torch.futures.Future
    for name in ("wait", "value"):
        real = getattr(future_cls, name)

        def pending(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if _STATE.active and _STATE.mode == HOOK and not self.done():
                _waits("a future that has not completed")
            return _real(self, *args, **kwargs)

        setattr(future_cls, name, pending)
    real_sync = torch.cuda.synchronize

    def synchronize(*args: Any, **kwargs: Any) -> Any:
        if _STATE.active and _STATE.mode == HOOK:
            _waits("the whole device (torch.cuda.synchronize)")
        return real_sync(*args, **kwargs)

    torch.cuda.synchronize = synchronize


def _start(path: str, mode: str) -> None:
    _STATE.active, _STATE.mode, _STATE.path = True, mode, str(path)
    _STATE.found, _STATE.requests, _STATE.waited = [], [], set()
    _STATE.completed = set()


def _settle() -> None:
    """Wait on the requests the call left unwaited before they are let go: a dropped request
    may never reach its peer, which would then wait forever for it (gloo, under load). One
    whose peer never answers is let go after a while: the check's deadline names that."""
    for work, _, _ in _STATE.requests:
        if id(work) not in _STATE.waited and id(work) not in _STATE.completed:
            with contextlib.suppress(Exception):  # its failure is the peer's story, told there
                work.wait(datetime.timedelta(seconds=SETTLE_S))
    _STATE.requests = []


def _problem(mode: str) -> str | None:
    """What the call just ended did wrong, first thing first (None: nothing)."""
    _STATE.active = False
    if _STATE.found:
        return _STATE.found[0]
    for work, what, where in _STATE.requests:
        if id(work) in _STATE.waited:
            continue
        if mode == HOOK:
            return (
                f"{what}{where} in your hook is never waited on: its future is not what the "
                "hook returns, so DDP may use the gradients before they are summed. Return "
                "work.get_future() (chained with .then())"
            )
        return (
            f"{what}{where} was never waited on: call .wait() on every isend and irecv "
            "request before the function returns (an isend not waited on may still be "
            "reading its buffer when the caller reuses it; an irecv's data may not have "
            "arrived)"
        )
    return None


@contextlib.contextmanager
def watching(learner_file: str) -> Iterator[None]:
    """A learner's collective under the P2P rules; raises `Refused` at the end for the first
    thing it did wrong, even if its own code caught it."""
    _start(learner_file, P2P)
    try:
        yield
    except Exception:  # whatever the learner's code raised: a refusal it caused comes first
        problem = _problem(P2P)
        if problem:  # the refusal, not what the learner's code made of it
            raise Refused(problem) from None
        raise
    problem = _problem(P2P)
    _settle()
    if problem:
        raise Refused(problem)


@contextlib.contextmanager
def recording(learner_file: str) -> Iterator[list[str]]:
    """A learner's DDP hook call under the HOOK rules: what it did wrong is appended to the
    list it yields, nothing is raised (inside DDP's backward, its peers would wait forever)."""
    found: list[str] = []
    _start(learner_file, HOOK)
    try:
        yield found
    finally:
        problem = _problem(HOOK)
        _settle()
        if problem:
            found.append(problem)


def learner_line(exc: BaseException, path: str) -> str:
    """'ValueError: ... (line N of file.py)' for an exception out of the learner's call."""
    text = str(exc).strip().splitlines()
    what = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    if isinstance(exc, Refused):
        return text[0] if text else what
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == path:
            line = frame.lineno
    return f"{what} (line {line} of {Path(path).name})" if line else what
