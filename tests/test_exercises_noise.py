"""No correct solution is rejected by noise: the PyTorch track's references pass many checks in a
row while another process keeps a core busy (as the spare worker, the app or a second check
does on a real machine).

Opt-in long variants (minutes): GPULAB_LONG=1.
- on any machine: every CPU exercise of the track, 20 checks in a row (GPULAB_NOISE_RUNS);
- under -m gpu, on the GPU machine: every exercise of the track on the GPU, 50 in a row.
honest-timing's CPU case runs 20 in a row by default, in test_exercises_honest_timing.py.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest

from gpulab.exercises.catalog import load_catalog
from gpulab.exercises.job import check_inline

TRACK = [
    "vector-add",
    "device-agnostic",
    "model-to-device",
    "memory-tracker",
    "tree-reduction",
    "bandwidth",
    "mixed-precision",
    "honest-timing",
    "ddp",
]
CATALOG = load_catalog()
LONG = os.environ.get("GPULAB_LONG") == "1"
long_only = pytest.mark.skipif(not LONG, reason="long: set GPULAB_LONG=1")


@functools.cache
def _inventory():
    from gpulab.core.devices import detect

    return detect()


@pytest.fixture
def busy_core():
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def _in_a_row(ex_id: str, runs: int, inventory) -> None:
    ex = CATALOG.get(ex_id)
    why = ex.unavailable(inventory)
    if why:
        pytest.skip(why)
    for i in range(runs):
        seed = 5000 + i
        result = check_inline(ex.id, str(ex.solution_path), seed, quick=False, inventory=inventory)[
            0
        ]
        assert result.verdict == "pass", (
            f"{ex.id}, check {i + 1} of {runs} (seed {seed}): {result.message}"
        )


@long_only
@pytest.mark.parametrize("ex_id", TRACK)
def test_cpu_references_pass_in_a_row_with_a_core_busy(ex_id, busy_core, cpu_inventory):
    _in_a_row(ex_id, int(os.environ.get("GPULAB_NOISE_RUNS", "20")), cpu_inventory)


@long_only
@pytest.mark.gpu
@pytest.mark.parametrize("ex_id", TRACK)
def test_gpu_references_pass_50_in_a_row_with_a_core_busy(ex_id, busy_core):
    _in_a_row(ex_id, int(os.environ.get("GPULAB_NOISE_RUNS", "50")), _inventory())
