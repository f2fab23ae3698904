"""The CUDA C sources an exercise folder's Python files build, found by loading each file with a
`cupy` whose RawKernel records what it is given: so the tests can compile every kernel of the
track for the emulator in one compiler run (`prebuild`) before any check needs one."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from gpulab.emulator import cuda, cupy_module
from gpulab.exercises.sandbox import Guard

_count = itertools.count()


def variants(folder: Path) -> list[Path]:
    """Every solution file of a kernel exercise: starter, reference, right/, wrong/, race/, slow/."""
    return [
        folder / "starter.py",
        folder / "solution.py",
        *sorted(folder.glob("right/*.py")),
        *sorted(folder.glob("wrong/*.py")),
        *sorted(folder.glob("race/*.py")),
        *sorted(folder.glob("slow/*.py")),
    ]


def load(path: Path) -> ModuleType:
    """`path` imported as a fresh module of its own."""
    spec = importlib.util.spec_from_file_location(f"_kernel_source_{next(_count)}", path)
    assert spec is not None and spec.loader is not None, path
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sources(folder: Path, paths: list[Path] | None = None) -> dict[str, tuple[str, str]]:
    """Every RawKernel source the folder's Python files build (`variants` unless `paths`), as
    (code, kernel name) by "file:kernel"."""
    found: dict[str, tuple[str, str]] = {}
    extra = cupy_module.cupyx_modules()
    saved = {name: sys.modules.get(name) for name in ("cupy", *extra)}
    sys.modules.update(extra)
    # wrong/ files patch the grader at import (the emulator's trace, gpulab's classes): loaded
    # here only to read their sources, their patches must not outlive the load, or every later
    # check in the test process runs on a broken watch (zip-add's library call passed)
    guard = Guard(classes=True)
    try:
        for path in paths or variants(folder):
            mod = cupy_module.make()

            class Recorder(cuda.RawKernel):
                def __init__(self, code: str, name: str, *a: Any, _p: Path = path, **kw: Any):
                    super().__init__(code, name, *a, **kw)
                    found[f"{_p.relative_to(folder)}:{name}"] = (code, name)

            class Module(cupy_module.RawModule):
                def get_function(self, name: str, _k: type = Recorder) -> Any:
                    return _k(self.code, name)

            vars(mod).update(RawKernel=Recorder, RawModule=Module)
            sys.modules["cupy"] = mod
            try:
                load(path)
            finally:
                guard.restore()
                guard.hooks_changed()
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return found


def prebuild(folders: list[Path]) -> None:
    """Every kernel every variant of `folders` builds, compiled for the emulator at once (the
    library is kept on disk by its text: the same folders in another test cost no compile)."""
    cuda.prebuild([code for f in folders for code, _ in sources(f).values()])
