"""Multi-process exercise checks: a learner's function run on N ranks (gpulab.core.ranks).

Ranks are fresh processes (forked from a clean fork server), so they cannot be handed the
learner's function object: each rank loads the learner's file (the very text the grader loaded)
and the check's file itself, then calls the check's `rank(rc, fn, case)`. A check that must act
before the learner's file is imported (guard a library whose names the file binds at import)
defines `before_load(rc)`.

Gloo on the CPU by default; a check that runs on GPUs asks for NCCL (one GPU per rank). A check
may give a deadline: ranks still running then are stopped, and `Stuck` says so (ranks that all
wait for a message no peer sends never end by themselves).
"""

from __future__ import annotations

import linecache
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

from gpulab.core import ranks
from gpulab.core.errors import Cancelled
from gpulab.exercises import api
from gpulab.exercises.sandbox import Guard, fresh_name, load_text
from gpulab.experiments.base import Context

# This module and what it imports (the sandbox, the experiments' Context); and torch._dynamo,
# which DistributedDataParallel imports when the first one is built: 5 s in every rank of a
# DDP check on a busy 2-core box, once in the fork server instead
ranks.preload(__name__, "sympy", "torch.fx.experimental.symbolic_shapes")


class Stuck(RuntimeError):
    """The ranks did not finish by the check's deadline; they were stopped."""


def file_text(path: str) -> str:
    """The text the grader loaded from `path` (linecache's), else the file's."""
    cached = linecache.cache.get(path)
    return (
        "".join(cached[2])
        if cached is not None and len(cached) > 2
        else Path(path).read_text(encoding="utf-8")
    )


class NotInTheFile(api.CheckError):
    """The entry function the file names is defined somewhere else; str() is one line."""

    final = True  # every case would load the same other file


def source(fn: Any) -> tuple[str, str]:
    """(path, text) of the file that defines `fn`: the text the grader loaded, for a rank to load
    again. `fn` must come from a file gpulab loaded (the learner's, our yardstick): a file that
    only imported its entry (`from torch...default_hooks import allreduce_hook`, ddp-overlap's
    very answer) had each rank load torch's own module as the learner's file, and passed."""
    name = getattr(fn, "__module__", None) or ""
    module = sys.modules.get(name)
    if module is None or not name.startswith(_LOADED):
        where = f"{name}.{getattr(fn, '__qualname__', fn)}" if name else repr(fn)
        raise NotInTheFile(
            f"your file's {getattr(fn, '__name__', 'entry function')} is {where}, imported, not "
            "written there: write the function in your file (the exercise is that function)"
        )
    path = module.__file__ or ""
    return path, file_text(path)


# the module names `sandbox.fresh_name` gives the files gpulab loads
_LOADED = "_gpulab_"


def launch(
    check_file: str,
    fn: Any,
    entry: str,
    case: Any,
    world_size: int,
    *,
    backend: str = "gloo",
    deadline_s: float | None = None,
) -> list[Any]:
    """Every rank's return of the check's `rank(rc, fn, case)`, in rank order."""
    learner_file, learner_text = source(fn)
    job = (check_file, file_text(check_file), learner_file, learner_text, entry, case)
    end = time.monotonic() + deadline_s if deadline_s else None
    ctx = Context(is_cancelled=(lambda: time.monotonic() > end) if end else None)
    try:
        return ranks.launch(ctx, _rank_entry, world_size, job, backend=backend, warm=True)
    except Cancelled:
        raise Stuck(f"the {world_size} ranks had not finished after {deadline_s:g} s") from None


def load_in_rank(
    rc: Any, check_file: str, check_text: str, files: list[tuple[str, str, str]]
) -> tuple[Any, list[Any], Guard]:
    """In a rank: (the check's module, the entry function of each (path, text, entry) file, a
    Guard over torch, gpulab's modules and the check's), the check's `before_load(rc)` run before any
    of the files is loaded. Whatever of those the files rebound as they loaded fails here
    (`guarded`), and so after each thing the rank does for the check."""
    # A rank inherits the fork server's start method, and a process started that way cannot import
    # the learner's module: a DataLoader worker (num_workers > 0) whose collate_fn the learner
    # wrote would die unpickling it. Fork, as torchrun's ranks do on Linux.
    multiprocessing.set_start_method("fork", force=True)
    check = load_text(check_text, Path(check_file), fresh_name("check", "ranked"))
    before = getattr(check, "before_load", None)
    if before is not None:
        before(rc)
    # Taken before any file loads, the yardstick's too: in one rank with the learner's, its
    # code is the check's to keep. Over torch too (the Tensor methods the pool's verify and
    # prepare run), with the collective guard's wrappers already in place as the baseline
    guard = Guard(classes=True, extra=(check,))
    functions = []
    for path, text, entry in files:
        module = load_text(text, Path(path), fresh_name("learner", "ranked"))
        functions.append(getattr(module, entry))
    guard.keep_code(*functions)
    guarded(guard)
    return check, functions, guard


class Rebound(RuntimeError):
    """The learner's code rebound a function of the check's; str() is one line."""


def guarded(guard: Guard) -> None:
    """Put back what was rebound since the last look; Rebound names the first thing. A torch
    function or dispatch mode left on counts too: it would see (and could do) the check's work."""
    changed = guard.restore()
    if changed:
        raise Rebound(
            f"your code rebound {changed[0]}, which the check uses to run and verify your "
            "call: a check's own functions are not yours to change"
        )
    torch = sys.modules.get("torch")
    if torch is None:
        return
    modes = torch._C._len_torch_function_stack() + torch._C._len_torch_dispatch_stack()
    if modes:
        raise Rebound(
            f"your code left {modes} torch mode(s) on after its call (a TorchFunctionMode or "
            "TorchDispatchMode entered and not left): it would watch the check's own work"
        )


def _rank_entry(
    rc: Any, check_file: str, check_text: str, path: str, text: str, entry: str, case: Any
) -> Any:
    check, (fn,), guard = load_in_rank(rc, check_file, check_text, [(path, text, entry)])
    out = check.rank(rc, fn, case)
    guarded(guard)
    return out
