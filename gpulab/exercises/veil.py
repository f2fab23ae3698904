"""torch's profiler looks off to the learner's code, on or not.

A check traces some calls and not others: the kernel trace records what ran in each checked call
of a kernel exercise, profile-step and compile-fused profile the calls they read. Code that asks
whether the profiler is on could do the work when it is and hand it to a library when it is not,
in the timed calls. The reach scan refuses these predicates spelled out; a name built at run time
(`getattr(prof, "_is_" + "profiler_enabled")`) slips past it. So, once a process, the three
predicates torch offers are replaced by ones that answer "off" to a caller in the learner's code
and the truth to everyone else (torch's own modules read them: dynamo, Inductor's launchers):

- `torch._C._autograd._profiler_enabled` (and every torch module that imported it),
- `torch._C._autograd._profiler_type` (ActiveProfilerType.NONE to the learner),
- `torch.autograd.profiler._is_profiler_enabled`, a module global: kept False in the module's
  namespace (what `vars()` and `inspect.getattr_static` read) while the true value lives here,
  served by a property of the module's class to callers other than the learner.

Who is calling is read from the stack: a caller in torch or gpulab gets the truth; otherwise the
answer is "off" when a frame of the learner's module (`_gpulab_learner...`) is above it.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from gpulab.exercises.frames import LEARNER as _LEARNER

_TRUSTED = ("torch", "gpulab")
_state: dict[str, Any] = {"on": False, "installed": False}


def _asked_by_learner(depth: int) -> bool:
    """Whether the caller `depth` frames up is the learner's code, or code it called that is not
    torch's or gpulab's own."""
    try:
        frame: Any = sys._getframe(depth + 1)
    except ValueError:
        return False
    first = str(frame.f_globals.get("__name__", ""))
    if first.split(".")[0] in _TRUSTED:
        return False
    for _ in range(100):
        if frame is None:
            return False
        if str(frame.f_globals.get("__name__", "")).startswith(_LEARNER):
            return True
        frame = frame.f_back
    return False


class _VeiledProfilerModule(types.ModuleType):
    """torch.autograd.profiler's class once veiled: its `_is_profiler_enabled` is a property."""

    @property
    def _is_profiler_enabled(self) -> bool:
        return False if _asked_by_learner(1) else bool(_state["on"])

    @_is_profiler_enabled.setter
    def _is_profiler_enabled(self, value: bool) -> None:
        _state["on"] = bool(value)


def _set_is_profiler_enabled(enable: bool) -> None:
    _state["on"] = bool(enable)


def _wrap(real: Any, off: Any) -> Any:
    def veiled(*args: Any, **kwargs: Any) -> Any:
        return off if _asked_by_learner(1) else real(*args, **kwargs)

    veiled.__name__ = getattr(real, "__name__", "veiled")
    veiled.__qualname__ = veiled.__name__
    veiled.__doc__ = getattr(real, "__doc__", None)
    veiled.__wrapped__ = real  # type: ignore[attr-defined]  # inspect.unwrap's attribute, set by hand
    return veiled


def install() -> bool:
    """Veil the profiler's predicates in this process (once; a no-op without torch or where
    torch's layout differs). True when the veil is on."""
    if _state["installed"]:
        return True
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    autograd_c = getattr(getattr(torch, "_C", None), "_autograd", None)
    prof = sys.modules.get("torch.autograd.profiler")
    enabled = getattr(autograd_c, "_profiler_enabled", None)
    kind = getattr(autograd_c, "_profiler_type", None)
    types_of = getattr(getattr(torch._C, "_profiler", None), "ActiveProfilerType", None)
    none = getattr(types_of, "NONE", None)
    if prof is None or enabled is None or kind is None or none is None:
        return False
    if type(prof) is not types.ModuleType or not hasattr(prof, "_set_is_profiler_enabled"):
        return False
    swaps = {id(enabled): _wrap(enabled, False), id(kind): _wrap(kind, none)}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "torch" or name.startswith("torch.")):
            continue
        space = getattr(module, "__dict__", None)
        if not isinstance(space, dict):
            continue
        for key, value in list(space.items()):
            if id(value) in swaps and value in (enabled, kind):
                setattr(module, key, swaps[id(value)])
    _state["on"] = bool(vars(prof).get("_is_profiler_enabled", False))
    prof.__class__ = _VeiledProfilerModule
    vars(prof)["_is_profiler_enabled"] = False  # what a read of the namespace itself finds
    prof._set_is_profiler_enabled = _set_is_profiler_enabled  # type: ignore[attr-defined]  # private in torch's stubs
    _state["installed"] = True
    return True
