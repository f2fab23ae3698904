"""What every `gpulab ex` verb needs (the catalog, the learner's workspace, the store, what this
machine can run, JSON out, the learner's file), shared by `gpulab.ex.cli`, `watch` and
`gpulab.explain.cli` without importing one another. Heavy pieces load when a verb asks for them.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from gpulab.core.doc_tags import tagged
from gpulab.core.errors import BadInput
from gpulab.core.results import json_safe

if TYPE_CHECKING:
    from gpulab.exercises.loader import Catalog, Exercise
    from gpulab.exercises.workspace import Workspace
    from gpulab.store.database import Store


def catalog() -> Catalog:
    """The exercise catalog."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.loader import load_catalog

    return load_catalog()


def workspace(args: argparse.Namespace) -> Workspace:
    """The learner's workspace (--workdir, GPULAB_WORKDIR or the default)."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.workspace import Workspace

    return Workspace(getattr(args, "workdir", None))


def store() -> Store:
    """The progress store."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.store.database import Store

    return Store()


def machine() -> Any:
    """What this machine can run. Without an NVIDIA driver we know there is no GPU without
    importing torch (a second and more); with one, `detect()` asks torch and CuPy."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.core.devices import _cuda_hidden, _driver, detect

    driver, _, error = _driver()
    if driver and not _cuda_hidden():
        return detect()
    return cpu_only("CUDA_VISIBLE_DEVICES hides every GPU" if _cuda_hidden() else error)


def cpu_only(why: str) -> Any:
    """An inventory of a machine without a usable GPU (and why), built without importing torch."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.core.devices import EMULATOR, Backend, Inventory, emulator_backend

    inv = Inventory(gpu_reason=why or "no usable GPU")
    inv.backends["numpy"] = Backend("numpy", True)
    inv.backends["torch-cpu"] = Backend("torch-cpu", True)
    for name in ("torch-cuda", "cupy"):
        inv.backends[name] = Backend(name, False, reason=inv.gpu_reason)
    inv.backends[EMULATOR] = emulator_backend()
    return inv


def emit_json(data: Any) -> None:
    """Print `data` as the tagged JSON document of `gpulab ex --json`."""
    print(json.dumps(tagged("exercises", json_safe(data)), indent=2, default=str))


def _file(args: argparse.Namespace, ex: Any) -> Any:
    path = workspace(args).path(ex)
    if not path.is_file():
        raise BadInput(f"no file {path}: `gpulab ex reset {ex.id}` creates it from the starter")
    return path


def runnable(args: argparse.Namespace, name: str) -> Exercise:
    """Exercise `name`, or BadInput saying why this machine cannot run it."""
    ex = catalog().get(name)
    why = ex.unavailable(machine())
    if why:
        raise BadInput(f"{ex.id} {why}")
    return ex
