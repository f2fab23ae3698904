"""Checks through a real worker: learner code that loops forever, crashes the process or raises is
a failed check with a readable message, and the next check runs on a worker that works.

One sequence, one client: every replacement costs a worker start (it imports torch).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulab.ex.session import Checker
from gpulab.exercises.loader import load_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exercises"


async def test_loops_crashes_and_raises_are_survived(tmp_path):
    ex = load_catalog(FIXTURES).get("double")
    solution = ex.solution_path
    env = {"GPULAB_EXERCISES_PATH": str(FIXTURES), "GPULAB_NO_STANDBY": "1"}
    logs: list[str] = []

    def on_event(event):
        if event["type"] == "log" and event.get("stream") == "stdout":
            logs.append(event["line"])

    def mine(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    # The 3 s limit is for the endless loop alone: under a busy core the first check in a
    # replacement worker (its grader imported on that call) once took longer than 3 s, and
    # every other check here runs under the exercise's own limit
    async with Checker(quick=True, standby=False, env=env, on_event=on_event) as c:
        await c.client.wait_ready(120)
        first_pid = c.client.worker_pid

        result, latency = await c.check(ex, solution, 1)
        assert result.passed, result.message
        # where its time went comes back from the worker, and fits inside the latency seen here
        assert {"runs", "compare", "timing: rounds"} <= set(result.phases)
        assert sum(result.phases.values()) == pytest.approx(result.seconds, abs=1e-6)
        assert result.seconds <= latency

        noisy = mine(
            "noisy.py", "def double(x, out):\n    print('hello from', x.size)\n    out[:] = 3 * x\n"
        )
        result, _ = await c.check(ex, noisy, 2)
        assert result.kind == "wrong" and "hello from 1" in logs
        assert c.client.worker_pid == first_pid  # a wrong answer costs no worker

        loop = mine("loop.py", "def double(x, out):\n    while True:\n        pass\n")
        c.time_limit = 3
        result, seconds = await c.check(ex, loop, 3)
        c.time_limit = None
        assert not result.passed and result.kind == "timeout"
        assert "time limit of 3 s" in result.message and "worker replaced" in result.message
        assert seconds < 30

        result, _ = await c.check(ex, solution, 4)
        assert result.passed, result.message
        assert c.client.worker_pid != first_pid
        second_pid = c.client.worker_pid

        crash = mine(  # faulthandler's own fault by a built name (ctypes' reads by address,
            # which crashed the worker here before, are refused whoever names the module)
            "crash.py",
            "import importlib\nf = importlib.import_module('fault' + 'handler')\n"
            "def double(x, out):\n    getattr(f, '_sig' + 'segv')()\n",
        )
        result, _ = await c.check(ex, crash, 5)
        assert not result.passed and result.kind == "crash"
        assert "crashed the worker" in result.message and "SIGSEGV" in result.message

        result, _ = await c.check(ex, solution, 6)
        assert result.passed and c.client.worker_pid not in (first_pid, second_pid)

        exits = mine("exits.py", "import os\ndef double(x, out):\n    os._exit(0)\n")
        result, _ = await c.check(ex, exits, 7)
        assert not result.passed and result.kind == "crash"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
async def test_a_check_in_the_worker_records_progress_through_the_cli(
    tmp_path, monkeypatch, capsys
):
    from gpulab.cli import main
    from gpulab.ex import cli as ex_cli
    from gpulab.ex import commands as ex_commands

    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(FIXTURES))
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "w"))
    monkeypatch.setattr(ex_cli, "machine", lambda: ex_commands.cpu_only("test"))
    monkeypatch.setattr(ex_commands, "machine", lambda: ex_commands.cpu_only("test"))
    assert main(["ex", "reset", "double"]) == 0
    (tmp_path / "w" / "901_double.py").write_text(
        (FIXTURES / "901-double" / "solution.py").read_text()
    )
    capsys.readouterr()
    import asyncio

    code = await asyncio.to_thread(main, ["ex", "check", "double", "--quick", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert '"verdict": "pass"' in out and '"state": "passing"' in out


def test_watch_ends_cleanly_on_ctrl_c(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from gpulab.testing.signals import default_signals

    env = {
        **os.environ,
        "GPULAB_EXERCISES_PATH": str(FIXTURES),
        "GPULAB_WORKDIR": str(tmp_path / "w"),
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])
        ),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpulab", "ex", "watch", "double", "--inline", "--quick"],
        preexec_fn=default_signals,  # a background job's shell hands SIGINT down ignored
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        seen = ""
        while "replay these inputs" not in seen and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        assert "FAIL  double" in seen, seen
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Stopped watching" in out and "Traceback" not in err


@pytest.mark.gpu
async def test_vector_add_on_the_gpu_grades_against_the_ceiling(tmp_path):
    ex = load_catalog().get("vector-add")
    async with Checker(standby=False) as c:
        await c.client.wait_ready(300)
        result, _ = await c.check(ex, ex.solution_path, 1)
        assert result.passed, result.message
        again, seconds = await c.check(ex, ex.solution_path, 2)
    t = again.timing
    assert t["method"] == "cuda-events" and t["ceiling"]["value"] > 100  # GB/s of a GPU
    assert again.grade in ("silver", "gold"), (again.grade, t["fraction"])
    assert t["library"]["name"] == "torch.add" and t["library_fraction"] > 0.5
    state = t["device_state"]
    assert state["temperature_c"] is not None or state["na"]
    print(f"vector-add repeat check {seconds:.2f} s, {100 * t['fraction']:.0f}% of copy")


@pytest.mark.gpu
async def test_an_illegal_address_in_a_kernel_is_a_failed_check_and_a_new_worker(tmp_path):
    from conftest import cupy_available

    if not cupy_available():
        pytest.skip("needs CuPy")
    ex = load_catalog(FIXTURES).get("double")
    bad = tmp_path / "oob.py"
    bad.write_text(
        "import cupy\n"
        "K = cupy.RawKernel(r'''extern \"C\" __global__ void k(float* p) {"
        " p[threadIdx.x + (1ull << 40)] = 1.0f; }''', 'k')\n"
        "def double(x, out):\n"
        "    p = cupy.zeros(1, dtype=cupy.float32)\n"
        "    K((1,), (32,), (p,))\n"
        "    cupy.cuda.Device().synchronize()\n"
    )
    env = {"GPULAB_EXERCISES_PATH": str(FIXTURES)}
    async with Checker(quick=True, standby=False, env=env) as c:
        await c.client.wait_ready(300)
        pid = c.client.worker_pid
        result, _ = await c.check(ex, bad, 1)
        assert not result.passed and result.kind == "crash", result.message
        assert "illegal" in result.message.lower()
        ok, _ = await c.check(ex, ex.solution_path, 2)
        assert ok.passed and c.client.worker_pid != pid
