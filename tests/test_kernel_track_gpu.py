"""The kernel exercises (06-08, 20-35) on a real GPU with CuPy: references and right/ solutions
pass, the GPU-only known-wrong solutions (work left on a stream, work skipped on a repeated
timed call, races between blocks) fail with their message, and the reference's speed against the
calibrated ceiling is printed (run with -s to read it).

The same check modules as tests/test_kernel_track.py, but no emulator: real NVRTC, real streams,
real races. race/ solutions are run too and only reported, since a race may pass by luck on a
given GPU. Every wrong/ file also runs through a worker in tests/exercises/test_exercises_catalog.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import cupy_available
from test_kernel_track import _EXERCISES, IDS, KERNELS, _header, _load

from gpulab.exercises import api
from gpulab.exercises.run_check import run_check

pytestmark = pytest.mark.gpu


def _gpu_ctx(seed: int = 11, quick: bool = False) -> api.Context:
    return api.Context(
        rng=np.random.default_rng(seed),
        seed=seed,
        gpu=True,
        cupy=True,
        device="cuda:0",
        quick=quick,
    )


def _check(folder, solution, seed: int = 11, timed: bool = False) -> str | None:
    """The engine's grader on the GPU: correctness only, or with `timed` the whole check with a
    quick timing (two input sets, so some timed calls repeat on the same buffers), where every
    timed call is checked."""
    ex = _EXERCISES[folder.name]
    if not timed:
        ex = dataclasses.replace(ex, timed=False)
    result = run_check(ex, solution, seed, _gpu_ctx(seed, quick=timed))
    return None if result.verdict == "pass" else result.message


RIGHT = [p for f in KERNELS for p in sorted(f.glob("right/*.py"))]
# GPU-only wrong files that stay inside their buffers, so they can run in this process (a write
# far out of bounds may fault and spoil the CUDA context: those run in a worker, in
# tests/exercises/test_exercises_catalog.py).
GPU_ONLY = [
    p
    for f in KERNELS
    for p in sorted(f.glob("wrong/*.py"))
    if _header(p)[1].startswith("# gpu-only:") and "illegal memory access" not in _header(p)[0]
]


def _name(p) -> str:
    return f"{p.parent.parent.name}/{p.parent.name}/{p.name}"


@pytest.fixture(autouse=True)
def _needs_cupy() -> None:
    if not cupy_available():
        pytest.skip("needs CuPy on a GPU")


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_gpu_reference_passes_and_the_starter_fails(folder) -> None:
    """wrong/ is tests/exercises/test_exercises_catalog.py's, through a worker: a write past the end can
    fault, and an illegal address ruins this process's CUDA context for every later test. race/
    and slow/ files stay in bounds; their verdicts are printed (-s)."""
    bad = _check(folder, folder / "solution.py")
    assert bad is None, bad
    assert _check(folder, folder / "starter.py") is not None
    for extra in sorted(folder.glob("race/*.py")) + sorted(folder.glob("slow/*.py")):
        bad = _check(folder, extra)
        print(f"{folder.name}/{extra.parent.name}/{extra.name}: {'rejected' if bad else 'passed'}")


@pytest.mark.parametrize("path", RIGHT, ids=[_name(p) for p in RIGHT])
def test_gpu_right_solutions_pass_with_every_timed_call_checked(path) -> None:
    """An unusual but correct solution (right/: streams, RawModule, fuse, float4, two passes)
    passes the cases and the timed calls."""
    bad = _check(path.parent.parent, path, timed=True)
    assert bad is None, f"{_name(path)}: {bad}"


@pytest.mark.parametrize("path", GPU_ONLY, ids=[_name(p) for p in GPU_ONLY])
@pytest.mark.parametrize("seed", [11, 2024])
def test_gpu_only_wrong_solutions_fail_with_their_message(path, seed) -> None:
    """What the emulator cannot show: a kernel left running on a stream, work skipped on a
    repeated timed call (the message comes from the timed-call check), a race between blocks."""
    first, _ = _header(path)
    bad = _check(path.parent.parent, path, seed, timed=True)
    assert bad is not None, f"{_name(path)} passes"
    alternatives = first.removeprefix("# expect: ").split(" | ")
    assert any(alt.lower() in bad.lower() for alt in alternatives), f"{_name(path)}: {bad}"


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_gpu_slow_versions_are_slower_than_the_reference_timed_beside_it(folder) -> None:
    """What slow/ teaches (a shape of kernel that costs speed) holds on this GPU: each slow/
    version, timed in rounds beside the reference and the expert as the grader times (a spin
    ahead of each start event), is slower than the reference; the reference's and every slow
    version's speed as a fraction of the expert's is printed (-s)."""
    from gpulab.core.interval import median_interval
    from gpulab.core.lead import spin
    from gpulab.core.rounds import Contender, Rounds

    check = _load(folder / "check.py")
    ctx = _gpu_ctx()
    paths = [folder / "expert.py", folder / "solution.py", *sorted(folder.glob("slow/*.py"))]
    contenders = []
    for path in paths:
        spec = check.timing(getattr(_load(path), check.ENTRY), ctx)
        inputs = spec.setup(0)
        contenders.append(Contender(path.name, lambda s=spec, i=inputs: s.learner(i)))
    rounds = Rounds(contenders, sync="cupy", lead=spin("cupy"))
    rounds.warm(2)
    rounds.extend(15)
    of_expert = {
        c.name: median_interval(rounds.ratios("expert.py", c.name)) for c in contenders[1:]
    }
    for name, r in of_expert.items():
        print(f"{folder.name}: {name}: {r.median:.3f} [{r.lo:.3f}-{r.hi:.3f}] of the expert")
    reference = of_expert["solution.py"]
    for name, r in of_expert.items():
        if name != "solution.py":
            assert r.hi < reference.median, (name, r, reference)
