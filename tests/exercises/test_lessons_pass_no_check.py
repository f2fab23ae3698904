"""No lesson's code passes an exercise's check: an exercise asks for the lesson's idea on another
problem, so retyping the lesson is not an answer.

Every code block of every lesson is retyped into every exercise the way a learner would (see
lesson_retype: the block's definitions of the exercise's entry or of its starter's names, a
kernel of the starter's written out in the block), and each such candidate goes through the
exercise's check. A block that shares no name with an exercise cannot pass it, so only the pairs
that share one run: a few dozen checks, on the CPU.

On the CPU a Python or Triton exercise's check runs as `gpulab ex check` runs it (Triton in its
interpreter), and a CUDA C exercise's on the CUDA emulator through the fake CuPy (as
tests/test_kernel_track.py does). An exercise whose check needs torch with CUDA has no CPU path:
its pairs carry the gpu mark and are reported as skipped, by name, until a GPU runs them. A
candidate that fails only because this machine lacks what it imports is reported the same way.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import exercise_checks
import lesson_retype
import numpy as np
import pytest

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.run_check import run_check
from gpulab.lessons.catalog import load_catalog as load_lessons

EXERCISES = list(load_catalog())
LESSONS = list(load_lessons())
SEED = 11
# A candidate that could not be tried here: the machine lacks what the lesson's code imports
_MISSING = re.compile(
    r"No module named '(cupy|cuda|pycuda)|Torch not compiled with CUDA|no NVIDIA driver|"
    r"CUDA driver|cudaErrorNoDevice|needs a GPU"
)


@dataclasses.dataclass(frozen=True)
class Pair:
    exercise: object
    where: str  # lesson file:line of the block
    retyped: lesson_retype.Retyped

    @property
    def id(self) -> str:
        return f"{self.exercise.id}<-{self.where}:{'+'.join(self.retyped.names)}"


def _pairs() -> list[Pair]:
    out = []
    for ex in EXERCISES:
        starter = ex.starter_path.read_text(encoding="utf-8")
        cuda = "cupy" in ex.needs
        for lesson in LESSONS:
            for block in lesson.code_blocks():
                where = f"{Path(lesson.source).name}:{block.line}"
                found = []
                if block.language == "python":
                    found.append(lesson_retype.retype_python(block.code, starter, ex.entry))
                if cuda:
                    found.append(lesson_retype.retype_kernels(block.code, starter))
                out += [Pair(ex, where, r) for r in found if r is not None]
    return out


PAIRS = _pairs()


def _on_cpu(ex) -> bool:
    """Whether the exercise's check has a CPU path: plain Python, Triton's interpreter, or (CUDA C)
    the emulator."""
    return "gpu" not in ex.needs


def _on_device(ex) -> bool:
    """Whether the check has a GPU path of its own to try as well (compiled Triton, real CUDA)."""
    return bool(set(ex.needs) & {"gpu", "cupy", "triton"})


CPU_PAIRS = [pytest.param(p, id=p.id) for p in PAIRS if _on_cpu(p.exercise)]
GPU_PAIRS = [
    pytest.param(p, id=p.id, marks=[pytest.mark.gpu]) for p in PAIRS if _on_device(p.exercise)
]


@pytest.fixture(scope="module", autouse=True)
def _close_worker():
    yield
    exercise_checks.close_worker()


def _emulated(ex, path: Path, monkeypatch: pytest.MonkeyPatch):
    """The check on the CUDA emulator through the fake CuPy, correctness only."""
    from gpulab.emulator import toolchain
    from gpulab.testing import fake_cupy

    if toolchain.compiler() is None:
        pytest.skip(f"could not run: {ex.id} needs a host C++ compiler for the CUDA emulator")
    fake_cupy.install(monkeypatch)
    ctx = api.Context(
        rng=np.random.default_rng(SEED),
        seed=SEED,
        gpu=False,
        cupy=False,
        device="cpu",
        fill_bytes=1 << 18,
        check_bytes=1 << 17,
    )
    return run_check(dataclasses.replace(ex, timed=False), path, SEED, ctx)


def _assert_fails(pair: Pair, tmp_path: Path, verdict) -> None:
    path = tmp_path / pair.exercise.file_name
    path.write_text(pair.retyped.source, encoding="utf-8")
    result = verdict(path)
    missing = _MISSING.search(result.message or "")
    if result.verdict != "pass" and missing:
        pytest.skip(f"could not run without a GPU: {pair.id} ({missing.group(0)})")
    assert result.verdict != "pass", (
        f"{pair.where} passes {pair.exercise.id}'s check when its {', '.join(pair.retyped.names)} "
        f"is typed into the starter: the exercise must ask for the lesson's idea on another "
        f"problem\n--- the candidate file ---\n{pair.retyped.source}"
    )


@pytest.mark.parametrize("pair", CPU_PAIRS)
def test_no_lesson_block_passes_an_exercise_on_the_cpu(pair: Pair, tmp_path, monkeypatch):
    ex = pair.exercise
    if "cupy" in ex.needs:
        _assert_fails(pair, tmp_path, lambda path: _emulated(ex, path, monkeypatch))
    else:
        _assert_fails(pair, tmp_path, lambda path: exercise_checks.check(ex, path, SEED))


@pytest.mark.parametrize("pair", GPU_PAIRS)
def test_no_lesson_block_passes_an_exercise_on_a_gpu(pair: Pair, tmp_path):
    why = pair.exercise.unavailable(exercise_checks.inventory())
    if why:
        pytest.skip(f"could not run without a GPU: {pair.id} ({why})")
    _assert_fails(pair, tmp_path, lambda path: exercise_checks.check(pair.exercise, path, SEED))


def test_the_pairs_only_a_gpu_can_try_are_named():
    """Without a GPU the GPU runs of the pairs skip under the gpu mark; this names the pairs
    that have no CPU run at all, so none is left out silently."""
    if exercise_checks.inventory().has_gpu:
        pytest.skip("a GPU is here: every pair ran on it")
    waiting = [p.id for p in PAIRS if not _on_cpu(p.exercise)]
    if waiting:
        pytest.skip(f"could not run without a GPU: {', '.join(waiting)}")


def test_the_retyping_finds_what_a_learner_would_copy():
    """The builder itself: a kernel and its wrapper from a block, the demo left out; a CUDA
    kernel put in place of the starter's; a block that shares no name gives nothing."""
    block = (
        "import torch\nimport triton\nBLOCK = 256\n\n"
        "@triton.jit\ndef k(x):\n    return x + BLOCK\n\n"
        "def add(x):\n    return k(x)\n\n"
        "x = torch.randn(4, device='cuda')\nprint(add(x))\n"
    )
    starter = "import triton\n\n@triton.jit\ndef k(x):\n    pass  # TODO\n\ndef add(x):\n    return k(x)\n"
    got = lesson_retype.retype_python(block, starter, "add")
    assert got is not None and got.names == ("add", "k")
    assert "BLOCK = 256" in got.source and "x + BLOCK" in got.source and "TODO" not in got.source
    assert "cuda" not in got.source and "print" not in got.source  # the demo stays out
    compile(got.source, "candidate", "exec")
    assert lesson_retype.retype_python("y = 1\nprint(y)\n", starter, "add") is None
    kernel = 'extern "C" __global__ void add(float* o, int n) {\n    o[0] = 1.0f;\n}'
    starter_cu = (
        'SOURCE = r"""\nextern "C" __global__ void add(float* o, int n) {\n    // TODO\n}\n"""\n'
    )
    cu = lesson_retype.retype_kernels(kernel, starter_cu)
    assert cu is not None and cu.names == ("add",)
    assert "o[0] = 1.0f;" in cu.source and "TODO" not in cu.source
    assert lesson_retype.retype_kernels("__global__ void add(float* o, ...);", starter_cu) is None


def test_the_pairs_cover_every_lesson_that_shares_a_name():
    """The pairs are found from the lessons as they are: at least the Triton chapter's kernels,
    and every pair's candidate parses."""
    assert any(p.where.startswith("21-triton.md") for p in PAIRS)
    for p in PAIRS:
        compile(p.retyped.source, p.id, "exec")
