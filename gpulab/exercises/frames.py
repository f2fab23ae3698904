"""Whose code a frame runs: the learner's, the standard library's, or a library's (the grader's
among them). The audit hook (sandbox.refuse_walks) and the refusals made while a learner's file
loads (refuse.aliases_refused) ask alike. `classifier()` binds what it reads when it is made, so
rebinding a module's names later cannot blind the functions it returns."""

from __future__ import annotations

import functools
import linecache
import os
import sys
from typing import Any, NamedTuple

LEARNER = "_gpulab_learner"  # the prefix of every learner module's name (sandbox.fresh_name)
# Libraries whose job is to start processes or share memory for their caller: a call through
# them is their caller's (torch.multiprocessing.spawn for the learner's code is the learner's)
RELAYS = ("torch.multiprocessing", "joblib", "loky", "multiprocess")
# Libraries that start processes of their own while a learner's call runs: compilers and their
# worker pools (torch.compile's, Triton's ptxas, CuPy's, the emulator's g++)
STARTERS = (
    "torch._inductor",
    "torch._dynamo",
    "torch.utils.cpp_extension",
    "triton",
    "cupy",
    "cupyx",
    "cupy_backends",
    "gpulab",
    # a DataLoader's workers: loading data in processes is what model-to-device's and ddp's
    # right/ loaders do (their workers run the learner's Dataset, so a sum computed there is a
    # known open door: docs/exercises.md)
    "torch.utils.data",
)


class Classifier(NamedTuple):
    """The questions, each of a frame (see classifier())."""

    learners: Any
    standard: Any
    deciding: Any
    any_learner: Any
    names: Any
    starter: Any


@functools.cache
def standard_roots() -> tuple[str, ...]:
    """Where the standard library's code lives (frozen modules name themselves "<frozen ...>")."""
    import sysconfig  # deferred: read once per classifier

    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"]}
    return (*(os.path.join(r, "") for r in roots), "<frozen ")


def classifier() -> Classifier:
    """The questions, bound now, each of a frame:
    - learners: a frame of a learner's module, or code that is not its module's own (exec'd under
      a borrowed name, or in no module at all);
    - standard: a frame of the standard library's own code, in its own module (installed
      packages are not: they live under the standard library's directory on many systems);
    - deciding: the first frame from this one up that is neither the standard library's nor a
      relay's: on whose behalf a standard function acts (subprocess.run for the learner's code,
      or for torch's, which starts its compile workers so), or None;
    - any_learner: whether a learner's module has a frame from this one up;
    - starter: a frame of a compiler's or pool's own code (STARTERS), which starts processes
      of its own in a learner's call;
    - names(frame, words): whether the line the frame is running names one of `words` itself:
      a library that asks for a frame, a process or NumPy's memory for its own use writes so on
      that line (`sys._getframe(1)`, `subprocess.Popen(...)`); one that calls a function it was
      handed (heapq's key, pytree's map, contextmanager's generator function) does not, and a
      learner's code can hand it sys._getframe, os.fork or torch.from_numpy."""
    modules, prefix, relays, starters = sys.modules, LEARNER, RELAYS, STARTERS
    roots = standard_roots()
    installed = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
    getline = linecache.getline

    def learners(frame: Any) -> bool:
        if frame is None:
            return False
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith(prefix):
            return True
        module = modules.get(name)
        if module is None or frame.f_globals is not getattr(module, "__dict__", None):
            return True
        return frame.f_code.co_filename != getattr(module, "__file__", None)

    def standard(frame: Any) -> bool:
        g = frame.f_globals
        name = str(g.get("__name__", ""))
        if name.startswith(prefix):
            return False
        module = modules.get(name)
        if module is None or g is not getattr(module, "__dict__", None):
            return False
        filename = frame.f_code.co_filename
        return filename.startswith(roots) and not any(p in filename for p in installed)

    def deciding(frame: Any) -> Any:
        while frame is not None and (
            standard(frame) or str(frame.f_globals.get("__name__", "")).startswith(relays)
        ):
            frame = frame.f_back
        return frame

    def any_learner(frame: Any) -> bool:
        while frame is not None:
            if str(frame.f_globals.get("__name__", "")).startswith(prefix):
                return True
            frame = frame.f_back
        return False

    def names(frame: Any, words: tuple[str, ...]) -> bool:
        if frame is None or learners(frame):
            return False
        line = getline(frame.f_code.co_filename, frame.f_lineno or 0)
        return any(w in line for w in words)

    def starter(frame: Any) -> bool:
        """A frame of one of STARTERS, from a file inside its package's own directory (a module
        the learner's code registers under such a name is not one)."""
        name = str(frame.f_globals.get("__name__", ""))
        if not any(name == s or name.startswith(s + ".") for s in starters) or learners(frame):
            return False
        package = modules.get(name.split(".")[0])
        where = [os.path.join(str(p), "") for p in getattr(package, "__path__", ())]
        return any(frame.f_code.co_filename.startswith(w) for w in where)

    return Classifier(learners, standard, deciding, any_learner, names, starter)
