"""Every ```python runnable block in the lessons really runs.

Without a GPU (CI) the plain `runnable` blocks run and take their CPU branches. Under `-m gpu`
on a GPU machine every block runs, plain and `runnable gpu` alike, so the
`if torch.cuda.is_available()` branches of the plain blocks are exercised too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.lessons.catalog import load_catalog
from gpulab.lessons.markup import CodeBlock

TIMEOUT_S = 120  # generous for 2 CI cores importing torch; the blocks themselves take seconds
FIXTURES = Path(__file__).parent / "fixtures" / "lessons"


def _blocks(gpu: bool) -> list[tuple[str, CodeBlock]]:
    found = []
    for lesson in load_catalog():
        for block in lesson.code_blocks():
            if block.runnable and block.gpu == gpu:
                found.append((f"{lesson.source}:{block.line}", block))
    return found


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONHASHSEED="0", MPLBACKEND="Agg")


def _run(block: CodeBlock, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The block in a child process of its own session, so a hang (a profiler that never
    returns, a grandchild holding the pipes) is ended whole, by the child's process group, and
    fails this test alone instead of stopping the rest of the run. From a file, as a learner
    runs a copied block: Triton's @jit reads its kernel's source from the file it is in."""
    script = cwd / f"block_{block.line}.py"
    script.write_text(block.code, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=_env(),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this test started, by its pid
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _check(where: str, block: CodeBlock, cwd: Path) -> None:
    try:
        out = _run(block, cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: still running after {TIMEOUT_S} s")
    if out.returncode != 0:
        pytest.fail(f"{where} failed:\n{out.stderr[-3000:]}")
    # "must assert/print something meaningful": a block that prints nothing teaches nothing
    if not out.stdout.strip():
        pytest.fail(f"{where}: printed nothing")


CPU_BLOCKS = _blocks(gpu=False)
GPU_BLOCKS = _blocks(gpu=True)
ALL_BLOCKS = sorted(CPU_BLOCKS + GPU_BLOCKS, key=lambda wb: (wb[0].split(":")[0], wb[1].line))


@pytest.mark.parametrize("where, block", CPU_BLOCKS, ids=[w for w, _ in CPU_BLOCKS])
def test_runnable_block(where, block, tmp_path):
    _check(where, block, tmp_path)


@pytest.fixture(scope="module")
def blocks_see_the_gpu() -> None:
    """The blocks run in child processes: they must see the GPU too, or every
    `torch.cuda.is_available()` branch would quietly take its CPU side and prove nothing."""
    probe = "import torch; print(torch.cuda.is_available(), torch.cuda.device_count())"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT_S, env=_env()
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "True", f"a child process sees no GPU: {out.stdout.strip()}"


@pytest.mark.gpu
@pytest.mark.parametrize("where, block", ALL_BLOCKS, ids=[w for w, _ in ALL_BLOCKS])
def test_every_runnable_block_on_the_gpu(where, block, tmp_path, blocks_see_the_gpu):
    """Plain blocks too: on a GPU their CUDA branches run, which CI never sees."""
    _check(where, block, tmp_path)


def test_the_gpu_run_covers_every_block():
    assert len(ALL_BLOCKS) == len(CPU_BLOCKS) + len(GPU_BLOCKS)
    assert {w for w, _ in ALL_BLOCKS} == {w for w, _ in CPU_BLOCKS} | {w for w, _ in GPU_BLOCKS}
    assert CPU_BLOCKS and GPU_BLOCKS


def test_every_lesson_has_code_that_runs():
    for lesson in load_catalog():
        assert any(b.runnable for b in lesson.code_blocks()), (
            f"{lesson.source}: no ```python runnable block"
        )


def test_the_runner_sees_a_failing_block(tmp_path):
    """The harness itself: a failing or silent block is caught, a good one passes."""
    blocks = {
        b.info: b for b in load_catalog(FIXTURES, strict=True).get("first-steps").code_blocks()
    }
    _check("fixture", blocks["python runnable"], tmp_path)
    with pytest.raises(pytest.fail.Exception, match="failed"):
        _check("bad", CodeBlock("python runnable", "assert 1 == 2\n", 1), tmp_path)
    with pytest.raises(pytest.fail.Exception, match="printed nothing"):
        _check("silent", CodeBlock("python runnable", "x = 1\n", 1), tmp_path)


# ---- CuPy installed, no GPU visible ----------------------------------------------------------
CUPY_BLOCKS = [(w, b) for w, b in ALL_BLOCKS if "import cupy" in b.code]


def _run_without_gpu(block: CodeBlock, cwd: Path) -> subprocess.CompletedProcess[str]:
    from gpulab.testing.no_gpu_cupy import write_no_gpu_cupy

    fake = write_no_gpu_cupy(cwd / "fake")
    path = os.pathsep.join(p for p in (str(fake), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(_env(), PYTHONPATH=path, CUDA_VISIBLE_DEVICES="")
    return subprocess.run(
        [sys.executable, "-c", block.code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize("where, block", CUPY_BLOCKS, ids=[w for w, _ in CUPY_BLOCKS])
def test_cupy_blocks_run_when_cupy_sees_no_gpu(where, block, tmp_path):
    """CuPy imports without a GPU and raises cudaErrorNoDevice on first use: a block that only
    catches ImportError crashes on such a machine. Every CuPy block must take its CPU path."""
    out = _run_without_gpu(block, tmp_path)
    assert out.returncode == 0, f"{where} failed with CuPy but no GPU:\n{out.stderr[-3000:]}"
    assert out.stdout.strip(), f"{where}: printed nothing"


def test_the_fake_cupy_fails_like_cupy_without_a_gpu(tmp_path):
    """The double itself: it imports, and the first real use raises the no-device error."""
    assert len(CUPY_BLOCKS) >= 4  # lessons 03, 04, 05 (two) and 17
    naive = CodeBlock("python runnable", "import cupy as cp\nprint(cp.arange(3))\n", 1)
    out = _run_without_gpu(naive, tmp_path)
    assert out.returncode != 0 and "cudaErrorNoDevice" in out.stderr
