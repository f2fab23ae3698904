"""Experiments: pure compute behind a small Context; see base.py and registry.py."""

from gpulab.experiments.base import Cancelled, Contender, Context, Experiment, ExperimentError
from gpulab.experiments.registry import UnknownExperiment, all_experiments, get

__all__ = [
    "Cancelled",
    "Context",
    "Contender",
    "Experiment",
    "ExperimentError",
    "UnknownExperiment",
    "all_experiments",
    "get",
]
