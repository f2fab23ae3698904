"""An exercise's check.py opened by a test: a module of its own, in sys.modules for as long as
the process lives, under a name that is not the grader's.

In sys.modules, because the grader's audit hook (sandbox.refuse_walks) counts code of a module
the interpreter does not know as the learner's: a check's own sys.setprofile watch, opened by
importlib outside sys.modules, was refused once an earlier test had installed the hook. Not
under the grader's `_gpulab_check_` names, because the catalog's check-module-rebound shortcuts
look for the running check by that prefix: a test's copy left there was found first, and they
failed with the wrong message."""

from __future__ import annotations

import itertools
import types
from typing import Any

from gpulab.exercises.sandbox import load_text

_count = itertools.count(1)


def open_check(ex: Any) -> types.ModuleType:
    """`ex`'s check.py (an Exercise of gpulab.exercises.loader) as a fresh module."""
    path = ex.check_path
    name = f"_test_check_{ex.id.replace('-', '_')}_{next(_count)}"
    return load_text(path.read_text(encoding="utf-8"), path, name)
