"""Whose code a frame runs: the learner's, the standard library's, or a library's (the grader's
among them). The audit hook (sandbox.refuse_walks) and the refusals made while a learner's file
loads (refuse.aliases_refused) ask alike. `classifier()` binds what it reads when it is made, so
rebinding a module's names later cannot blind the functions it returns."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

LEARNER = "_gpulab_learner"  # the prefix of every learner module's name (sandbox.fresh_name)
# Libraries whose job is to start processes or share memory for their caller: a call through
# them is their caller's (torch.multiprocessing.spawn for the learner's code is the learner's)
RELAYS = ("torch.multiprocessing", "joblib", "loky", "multiprocess")


def standard_roots() -> tuple[str, ...]:
    """Where the standard library's code lives (frozen modules name themselves "<frozen ...>")."""
    import sysconfig  # deferred: read once per classifier

    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"]}
    return (*(os.path.join(r, "") for r in roots), "<frozen ")


def classifier() -> tuple[Callable[[Any], bool], Callable[[Any], bool], Callable[[Any], bool]]:
    """(learners, standard, deciding), each of a frame:
    - learners: a frame of a learner's module, or code that is not its module's own (exec'd under
      a borrowed name, or in no module at all);
    - standard: a frame of the standard library's own code, in its own module (installed
      packages are not: they live under the standard library's directory on many systems);
    - deciding: whether the first frame from this one up that is neither the standard library's
      nor a relay's is the learner's, i.e. on whose behalf a standard function acts
      (subprocess.run for the learner's code, or for torch's, which starts its compile workers
      so)."""
    modules, prefix, relays = sys.modules, LEARNER, RELAYS
    roots = standard_roots()
    installed = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")

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

    def deciding(frame: Any) -> bool:
        while frame is not None and (
            standard(frame) or str(frame.f_globals.get("__name__", "")).startswith(relays)
        ):
            frame = frame.f_back
        return frame is not None and learners(frame)

    return learners, standard, deciding
