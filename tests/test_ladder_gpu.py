"""The ladder on a GPU (`-m gpu`): matmul-tiled's rungs timed in rounds beside the expert and
cuBLAS (gpulab.exercises.ladder_measure), each rung faster than the one below and the top at 0.85
of cuBLAS fp32 or more; then each rung the check passes, and a held-out kernel (our reference,
4 x 4 outputs a thread, between rungs 4 and 5), checked as a learner's solution with the full
timing, is placed on its own rung (the reference on 4 or 5) by its figure against the expert
timed beside it.

Prints the figures (-s). With GPULAB_LADDER_RECORD=FILE the measurement is written there as JSON,
for bench/results/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import cupy_available

from gpulab.exercises import api, ladder
from gpulab.exercises.ladder_measure import Measured, measure
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.run_check import run_check

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_available(), reason="needs CuPy")]

EX = load_catalog().get("matmul-tiled")


@pytest.fixture(scope="module")
def measured() -> Measured:
    m = measure(EX, rounds=15, say=print)
    for r in ladder.rungs(EX):
        f = m.rungs[r.name]
        print(f"{r.number} {r.name:<18} {f['value']:7.2f} {m.metric}  {f['of_top']:.3f} of the top")
    print(f"{m.library_name}: {m.library:.2f} {m.metric}")
    out = os.environ.get("GPULAB_LADDER_RECORD")
    if out:
        body = {"rungs": m.rungs, "library": m.library, "library_name": m.library_name}
        Path(out).write_text(json.dumps({**body, "metric": m.metric, "rounds": m.rounds}))
    return m


def test_each_rung_is_faster_than_the_one_below(measured):
    order = [r.name for r in ladder.rungs(EX)]
    values = [round(measured.rungs[n]["value"], 2) for n in order]
    assert measured.ordered(order), values
    assert measured.library and measured.rungs["expert"]["value"] >= 0.85 * measured.library


def _of_expert(path: Path) -> float:
    ctx = api.Context(rng=np.random.default_rng(11), seed=11, gpu=True, cupy=True, device="cuda:0")
    result = run_check(EX, path, 11, ctx)
    assert result.verdict == "pass", result.message
    return float(result.timing["of_yardstick"]["figure"])


def test_each_rung_checked_as_a_learners_solution_is_placed_on_its_own_rung(measured):
    rungs = ladder.rungs(EX)
    for r in rungs:
        if r.refused:
            continue  # below the exercise: the check refuses it, so it has no figure
        p = ladder.place(rungs, measured.rungs, of_top=_of_expert(r.path))
        assert p is not None and p.rung == r, (r.name, p)
    held_out = ladder.place(rungs, measured.rungs, of_top=_of_expert(EX.solution_path))
    assert held_out is not None and held_out.rung.number in (4, 5), held_out
