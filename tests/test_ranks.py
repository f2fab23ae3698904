"""Multi-process jobs on the CPU (gloo, world size 2): results, a crashing rank, a cancel, and a
parent killed with SIGKILL. Each failure path asserts, by pid, that no rank is left."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from test_runner import pid_alive

from gpulab.core import ranks
from gpulab.core.errors import Cancelled
from gpulab.experiments.base import Context
from gpulab.testing import ranks as rank_fns

pytest.importorskip("torch.distributed")
REPO = Path(__file__).resolve().parents[1]


def wait_gone(pids: list[int], within_s: float) -> list[int]:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        alive = [p for p in pids if pid_alive(p)]
        if not alive:
            return []
        time.sleep(0.02)
    return [p for p in pids if pid_alive(p)]


def rank_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()]


def test_two_ranks_reduce_and_rank_0_reaches_the_job(tmp_path, monkeypatch):
    monkeypatch.setenv(ranks.RANK_PIDS_ENV, str(tmp_path / "pids"))
    logs: list[str] = []
    progress: list[tuple[float, str]] = []
    ctx = Context(on_log=logs.append, on_progress=lambda f, m: progress.append((f, m)))
    values = ranks.launch(ctx, rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo")
    assert [v["rank"] for v in values] == [0, 1]
    assert all(v["sum"] == [3.0] * 4 for v in values)  # (1 + 0) + (1 + 1), on every rank
    assert values[0]["pid"] != values[1]["pid"] != os.getpid()
    assert logs == ["rank 0 says hello"]
    assert progress and progress[-1][0] == 1.0 and "1:100%" in progress[-1][1]
    assert wait_gone(rank_pids(tmp_path / "pids"), 2.0) == []


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failing_rank_ends_every_rank(tmp_path, monkeypatch, how):
    monkeypatch.setenv(ranks.RANK_PIDS_ENV, str(tmp_path / "pids"))
    t0 = time.monotonic()
    with pytest.raises(ranks.RankFailed) as info:
        ranks.launch(Context(), rank_fns.one_rank_fails, 2, (1, how), backend="gloo")
    assert info.value.rank == 1
    if how == "raise":
        assert "broke on purpose" in str(info.value) and "ValueError" in info.value.traceback
    else:
        assert "SIGKILL" in str(info.value)
    assert time.monotonic() - t0 < 10  # the start included; the teardown itself is immediate
    assert wait_gone(rank_pids(tmp_path / "pids"), 0.5) == []


@pytest.mark.parametrize("cooperative", [True, False], ids=["cooperative", "ignoring"])
def test_cancel_ends_every_rank_within_2_s(tmp_path, monkeypatch, cooperative):
    monkeypatch.setenv(ranks.RANK_PIDS_ENV, str(tmp_path / "pids"))
    flag = threading.Event()
    asked: list[float] = []

    def cancel_later() -> None:
        while not (tmp_path / "pids").exists():
            time.sleep(0.01)
        time.sleep(0.3)
        asked.append(time.monotonic())
        flag.set()

    threading.Thread(target=cancel_later, daemon=True).start()
    with pytest.raises(Cancelled):
        ranks.launch(Context(is_cancelled=flag.is_set), rank_fns.spin, 2, (cooperative,))
    assert time.monotonic() - asked[0] < 2.0
    assert wait_gone(rank_pids(tmp_path / "pids"), 0.2) == []


PARENT = textwrap.dedent(
    """
    import sys
    from gpulab.experiments.base import Context
    from gpulab.core import ranks
    from gpulab.testing import ranks as rank_fns
    ranks.launch(Context(), rank_fns.spin, 2, (False,), backend="gloo")
    """
)


def test_no_rank_survives_a_parent_killed_with_sigkill(tmp_path):
    pids_file = tmp_path / "pids"
    env = {
        **os.environ,
        ranks.RANK_PIDS_ENV: str(pids_file),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    parent = subprocess.Popen([sys.executable, "-c", PARENT], env=env)
    try:
        end = time.monotonic() + 60
        while not pids_file.exists() or len(pids_file.read_text().split()) < 2:
            assert parent.poll() is None and time.monotonic() < end, "the ranks never started"
            time.sleep(0.02)
        pids = rank_pids(pids_file)
        assert all(pid_alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        assert wait_gone(pids, 2.0) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


async def test_a_multi_rank_job_through_the_worker(tmp_path):
    """The worker forks the ranks (CPU): their output must not reach its event pipe as frames,
    and the worker takes the next job after them."""
    from gpulab.runner.client.runner_client import RunnerClient

    env = {ranks.RANK_PIDS_ENV: str(tmp_path / "pids"), "GPULAB_NO_STANDBY": "1"}
    async with RunnerClient(env=env, standby=False) as client:
        await client.wait_ready(120)
        job = await client.submit("allreduce", {"ranks": 2, "max_bytes": 64})
        final = await asyncio.wait_for(job.wait(), 120)
        assert final["type"] == "result", final
        assert all(v["passed"] for v in final["result"]["verdicts"])
        again = await client.submit("allreduce", {"ranks": 1})
        assert (await asyncio.wait_for(again.wait(), 60))["kind"] == "experiment-error"
    assert wait_gone(rank_pids(tmp_path / "pids"), 1.0) == []
