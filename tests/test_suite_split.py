"""bench/gpu_suite_one.sh's split: pytest-xdist workers each put on one GPU of GPULAB_TEST_GPUS by
tests/conftest.py, before anything in the worker starts CUDA (read here from probe tests that
write down what their worker was given: no GPU needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import os

import pytest

pytestmark = pytest.mark.uncalibrated  # no CPU calibration for a probe


def _note():
    out = os.environ["PROBE_OUT"]
    name = os.environ["PYTEST_XDIST_WORKER"]
    with open(os.path.join(out, name), "w") as f:
        f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))


def test_a():
    _note()


def test_b():
    _note()


def test_c():
    _note()


def test_d():
    _note()
"""


def test_each_worker_takes_the_next_gpu_of_the_list(tmp_path: Path) -> None:
    tests = Path(__file__).parent
    (tmp_path / "test_probe.py").write_text(PROBE)
    seen = tmp_path / "seen"
    seen.mkdir()
    env = dict(os.environ, GPULAB_TEST_GPUS="3,5", PROBE_OUT=str(seen), CUDA_VISIBLE_DEVICES="0")
    # three pytest starts: only the plugins they need, and no torch import to ask for a GPU
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", GPULAB_FORCE_CPU="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tests), env.get("PYTHONPATH", "")])
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-p",
            "xdist.plugin",
            "-p",
            "conftest",
            "-n",
            "2",
            "--dist",
            "load",
            str(tmp_path / "test_probe.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    given = {p.name: p.read_text() for p in seen.iterdir()}
    assert given == {"gw0": "3", "gw1": "5"}, given


def test_every_host_check_is_also_alone() -> None:
    """bench/gpu_suite_one.sh's phase 2 runs `alone and not host`, its last phase `host`: an
    exercise marked `host` but not `alone` would run in phase 1 beside the other workers."""
    from exercise_checks import ALONE, HOST

    assert HOST <= ALONE
