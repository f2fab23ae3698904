"""Every ```python runnable block in the lessons really runs (CPU here; `runnable gpu` on a GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.lessons.catalog import CodeBlock, load_catalog

TIMEOUT_S = 120  # generous for 2 CI cores importing torch; the blocks themselves take seconds
FIXTURES = Path(__file__).parent / "fixtures" / "lessons"


def _blocks(gpu: bool) -> list[tuple[str, CodeBlock]]:
    found = []
    for lesson in load_catalog():
        for block in lesson.code_blocks():
            if block.runnable and block.gpu == gpu:
                found.append((f"{lesson.source}:{block.line}", block))
    return found


def _run(block: CodeBlock, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED="0", MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-c", block.code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=cwd,
        env=env,
    )


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


@pytest.mark.parametrize("where, block", CPU_BLOCKS, ids=[w for w, _ in CPU_BLOCKS])
def test_runnable_block(where, block, tmp_path):
    _check(where, block, tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("where, block", GPU_BLOCKS, ids=[w for w, _ in GPU_BLOCKS])
def test_runnable_gpu_block(where, block, tmp_path):
    _check(where, block, tmp_path)


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
