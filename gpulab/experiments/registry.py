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
    "streams_overlap",
    "cuda_graphs",
)

# Experiments that run as jobs but are listed nowhere (module path -> its EXPERIMENT): the grader.
HIDDEN: tuple[str, ...] = ("gpulab.exercises.job",)

_cache: dict[str, Experiment] | None = None
_hidden: dict[str, Experiment] | None = None


class UnknownExperiment(BadInput, KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown experiment '{self.name}'; known: {', '.join(self.known)}"


def all_experiments() -> dict[str, Experiment]:
    global _cache
    if _cache is None:
        found: dict[str, Experiment] = {}
        for mod in MODULES:
            exp = importlib.import_module(f"gpulab.experiments.{mod}").EXPERIMENT
            found[exp.id] = exp
        _cache = found
    return _cache


def hidden_experiments() -> dict[str, Experiment]:
    global _hidden
    if _hidden is None:
        found = (importlib.import_module(mod).EXPERIMENT for mod in HIDDEN)
        _hidden = {exp.id: exp for exp in found}
    return _hidden


def get(name: str) -> Experiment:
    exps = all_experiments()
    if name not in exps:
        hidden = hidden_experiments()
        if name in hidden:
            return hidden[name]
        raise UnknownExperiment(name, list(exps))
    return exps[name]
