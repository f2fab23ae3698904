"""Every experiment gpulab knows, by id. Importing this module imports no torch and no CuPy."""

from __future__ import annotations

import importlib

from gpulab.core.errors import BadInput
from gpulab.experiments.base import Experiment

# One module per experiment; each defines EXPERIMENT. Order is the order the panel lists them.
MODULES: tuple[str, ...] = (
    "montecarlo",
    "blur",
    "matmul",
    "calibrate",
    "vector_add",
    "reduction",
    "bandwidth",
    "create_on_device",
    "round_trips",
    "batching",
    "in_place",
    "dtypes",
    "tensor_core_alignment",
    "memory_layout",
    "kernel_fusion",
    "mixed_precision",
    "profiler",
    "memory",
    "cold_start",
    "occupancy",
    "managed_memory",
    "break_it",
    "allreduce",
    "p2p",
    "ddp_scaling",
    "triton_kernels",
    "torch_compile",
    "warp_shuffle",
    "numerics",
    "profile_step",
    "streams_overlap",
    "cuda_graphs",
)

_cache: dict[str, Experiment] | None = None
# Experiments that run as jobs but are listed nowhere, by id: the exercise check registers itself
# here when the exercises' job module is imported (a layer above, which this one cannot import).
_hidden: dict[str, Experiment] = {}


class UnknownExperiment(BadInput, KeyError):
    """An experiment id that matches none; its message lists the known ones."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown experiment '{self.name}'; known: {', '.join(self.known)}"


def all_experiments() -> dict[str, Experiment]:
    """Every listed experiment by id, loaded once."""
    global _cache
    if _cache is None:
        found: dict[str, Experiment] = {}
        for mod in MODULES:
            exp = importlib.import_module(f"gpulab.experiments.{mod}").EXPERIMENT
            found[exp.id] = exp
        _cache = found
    return _cache


def register_hidden(exp: Experiment) -> None:
    """Make `exp` a job the runner can run by id without listing it (the exercise check). A
    listed experiment of the same id wins in `get`."""
    _hidden[exp.id] = exp


def hidden_experiments() -> dict[str, Experiment]:
    """The registered hidden experiments, by id (empty until a layer above registers one)."""
    return dict(_hidden)


def get(name: str) -> Experiment:
    """The experiment `name` (hidden ones too); UnknownExperiment when there is none."""
    exps = all_experiments()
    if name not in exps:
        hidden = hidden_experiments()
        if name in hidden:
            return hidden[name]
        raise UnknownExperiment(name, list(exps))
    return exps[name]
