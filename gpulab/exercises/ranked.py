"""Multi-process exercise checks: a learner's function run on N ranks (gpulab.core.ranks).

Ranks are fresh processes (forked from a clean fork server), so they cannot be handed the
learner's function object: each rank loads the learner's file (the very text the grader loaded)
and the check's file itself, then calls the check's `rank(rc, fn, case)`.
"""

from __future__ import annotations

import linecache
import multiprocessing
import sys
from pathlib import Path
from typing import Any

from gpulab.core import ranks
from gpulab.exercises.sandbox import fresh_name, load_text
from gpulab.experiments.base import Context


def _text(path: str) -> str:
    cached = linecache.cache.get(path)
    return (
        "".join(cached[2])
        if cached is not None and len(cached) > 2
        else Path(path).read_text(encoding="utf-8")
    )


def launch(check_file: str, fn: Any, entry: str, case: Any, world_size: int) -> list[Any]:
    """Every rank's return of the check's `rank(rc, fn, case)`, in rank order (gloo, CPU)."""
    learner_file = sys.modules[fn.__module__].__file__ or ""
    job = (check_file, _text(check_file), learner_file, _text(learner_file), entry, case)
    return ranks.launch(Context(), _rank_entry, world_size, job, backend="gloo")


def _rank_entry(
    rc: Any, check_file: str, check_text: str, path: str, text: str, entry: str, case: Any
) -> Any:
    # A rank inherits the fork server's start method, and a process started that way cannot import
    # the learner's module: a DataLoader worker (num_workers > 0) whose collate_fn the learner
    # wrote would die unpickling it. Fork, as torchrun's ranks do on Linux.
    multiprocessing.set_start_method("fork", force=True)
    check = load_text(check_text, Path(check_file), fresh_name("check", "ranked"))
    learner = load_text(text, Path(path), fresh_name("learner", "ranked"))
    return check.rank(rc, getattr(learner, entry), case)
