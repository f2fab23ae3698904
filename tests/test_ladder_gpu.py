"""The ladders on a GPU (`-m gpu`): each exercise's rungs timed in rounds beside its expert and
library (gpulab.exercises.ladder_measure), each rung faster than the one below or both at the
memory roof (a copy of the same bytes timed in the same rounds: no rung can beat DRAM), and
matmul's top at 0.85 of cuBLAS fp32 or more; then each rung the check passes, checked as a
learner's solution with the full timing, is placed on its own rung by its figure against the
expert timed beside it (or in the roof band that holds it), and so is each held-out variant of
tests/fixtures/ladder/ (a rung's idea in code the ladder does not hold). The exercises' own files
that are no rung (the references of matmul, reduction and softmax; transpose's unpadded tile of
32 x 8 threads) are placed within the rungs given in OWN (or in a roof band that meets them).

Prints the figures (-s). With GPULAB_LADDER_RECORD=FILE the measurements are written there as
JSON, one entry an exercise, for bench/results/.
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
from gpulab.exercises.loader import Exercise, load_catalog
from gpulab.exercises.run_check import run_check

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.alone,
    pytest.mark.skipif(not cupy_available(), reason="needs CuPy"),
]

CATALOG = load_catalog()
LADDERS = ["matmul-tiled", "reduction-kernel", "transpose-tiled", "softmax-rows"]
HELD_OUT = sorted((Path(__file__).parent / "fixtures" / "ladder").glob("*.py"))
# an exercise's own files that are no rung, and the rungs each may be placed on
OWN = {
    "matmul-tiled": {"solution.py": (4, 5)},  # 4 x 4 outputs a thread: between rungs 4 and 5
    "reduction-kernel": {"solution.py": (5, 6)},  # CuPy's generated reduction, 4 bytes a load
    "transpose-tiled": {"slow/no-padding.py": (2, 3)},  # 4 rows a thread, the tile unpadded
    "softmax-rows": {"solution.py": (3, 4)},  # a block per row, trees in shared memory
}


@pytest.fixture(scope="module", params=LADDERS)
def measured(request) -> tuple[Exercise, Measured]:
    ex = CATALOG.get(request.param)
    m = measure(ex, rounds=15, say=print)
    for r in ladder.rungs(ex):
        f = m.rungs[r.name]
        roof = "  at the roof" if ladder.at_roof(f) else ""
        print(
            f"{r.number} {r.name:<18} {f['value']:8.2f} {m.metric}  {f['of_top']:.3f} of the top"
            + roof
        )
    if m.library is not None:
        print(f"{m.library_name}: {m.library:.2f} {m.metric}")
    if m.roof is not None:
        print(f"memory roof (a copy of the same bytes): {m.roof:.2f} {m.metric}")
    out = os.environ.get("GPULAB_LADDER_RECORD")
    if out:
        path = Path(out)
        kept = json.loads(path.read_text()) if path.is_file() else {}
        body = {"rungs": m.rungs, "library": m.library, "library_name": m.library_name}
        body["roof"] = m.roof
        kept[ex.id] = {**body, "metric": m.metric, "rounds": m.rounds}
        path.write_text(json.dumps(kept, indent=1))
    return ex, m


def test_each_rung_is_faster_than_the_one_below(measured):
    ex, m = measured
    order = [r.name for r in ladder.rungs(ex)]
    values = [(round(m.rungs[n]["value"], 2), ladder.at_roof(m.rungs[n])) for n in order]
    assert m.ordered(order), (ex.id, values, m.roof)  # or both at the memory roof
    if ex.id == "matmul-tiled":
        assert m.library and m.rungs["expert"]["value"] >= 0.85 * m.library


def _of_expert(ex: Exercise, path: Path) -> float:
    ctx = api.Context(rng=np.random.default_rng(11), seed=11, gpu=True, cupy=True, device="cuda:0")
    result = run_check(ex, path, 11, ctx)
    assert result.verdict == "pass", (path.name, result.message)
    return float(result.timing["of_yardstick"]["figure"])


def test_each_rung_checked_as_a_learners_solution_is_placed_on_its_own_rung(measured):
    ex, m = measured
    rungs = ladder.rungs(ex)
    for r in rungs:
        if r.refused:
            continue  # below the exercise: the check refuses it, so it has no figure
        p = ladder.place(rungs, m.rungs, of_top=_of_expert(ex, r.path))
        assert p is not None and (p.rung == r or r in p.band), (ex.id, r.name, p)
    for path in HELD_OUT:
        if not path.name.startswith(ex.id + "-"):
            continue
        own = path.read_text().splitlines()[0].removeprefix("# held-out: ")
        p = ladder.place(rungs, m.rungs, of_top=_of_expert(ex, path))
        assert p is not None and own in {q.name for q in (p.rung, *p.band)}, (path.name, p)
    for rel, allowed in OWN[ex.id].items():
        p = ladder.place(rungs, m.rungs, of_top=_of_expert(ex, ex.folder / rel))
        print(f"{ex.id} {rel}: {p.sentence() if p else 'not placed'}")
        assert p is not None and {q.number for q in (p.rung, *p.band)} & set(allowed), (rel, p)
