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


def _child_env() -> dict[str, str]:
    """This environment, with the repository importable in a child Python."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


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


@pytest.mark.parametrize(
    ("fn", "said"),
    [
        # its group's teardown would wait for the collective its peers never join: the
        # failure stayed hidden until a check's deadline (ddp-overlap on CI's loaded box)
        (rank_fns.fails_with_a_collective_in_flight, "broke with a collective in flight"),
        # learner code may call sys.exit: a failure too, named
        (rank_fns.exits_quietly, "SystemExit"),
    ],
    ids=["collective-in-flight", "sys-exit"],
)
def test_a_failing_rank_is_reported_at_once_with_its_own_words(tmp_path, monkeypatch, fn, said):
    monkeypatch.setenv(ranks.RANK_PIDS_ENV, str(tmp_path / "pids"))
    end = time.monotonic() + 60
    t0 = time.monotonic()
    with pytest.raises(ranks.RankFailed) as info:
        ranks.launch(
            Context(is_cancelled=lambda: time.monotonic() > end), fn, 2, (1,), backend="gloo"
        )
    assert info.value.rank == 1 and said in str(info.value)
    assert time.monotonic() - t0 < 30
    assert wait_gone(rank_pids(tmp_path / "pids"), 2.0) == []


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
    env = {**_child_env(), ranks.RANK_PIDS_ENV: str(pids_file)}
    _kill_the_parent_of_its_ranks([sys.executable, "-c", PARENT], env, pids_file, 2.0)


def _kill_the_parent_of_its_ranks(
    argv: list[str], env: dict[str, str], pids_file: Path, within_s: float
) -> None:
    """Start `argv`, wait for two rank pids in `pids_file`, SIGKILL it: its ranks must go."""
    parent = subprocess.Popen(argv, env=env)
    try:
        end = time.monotonic() + 90
        while not pids_file.exists() or len(pids_file.read_text().split()) < 2:
            assert parent.poll() is None and time.monotonic() < end, "the ranks never started"
            time.sleep(0.02)
        pids = rank_pids(pids_file)
        assert all(pid_alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        assert wait_gone(pids, within_s) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


async def test_a_multi_rank_job_through_the_worker(tmp_path):
    """The worker forks the ranks (CPU): their output must not reach its event pipe as frames,
    and the worker takes the next job after them."""
    from gpulab.runner.client.runner_client import RunnerClient

    # On the CPU, as the docstring says: on a box with one GPU, 2 ranks are one too many
    env = {
        ranks.RANK_PIDS_ENV: str(tmp_path / "pids"),
        "GPULAB_NO_STANDBY": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    async with RunnerClient(env=env, standby=False) as client:
        await client.wait_ready(120)
        job = await client.submit("allreduce", {"ranks": 2, "max_bytes": 64})
        final = await asyncio.wait_for(job.wait(), 120)
        assert final["type"] == "result", final
        assert all(v["passed"] for v in final["result"]["verdicts"])
        again = await client.submit("allreduce", {"ranks": 1})
        assert (await asyncio.wait_for(again.wait(), 60))["kind"] == "experiment-error"
    assert wait_gone(rank_pids(tmp_path / "pids"), 1.0) == []


# -- ranks standing by (a collective check's next check finds its ranks started) -------------


@pytest.fixture
def no_standby_left():
    ranks.drop_standby()  # and what warm launches of earlier tests in this process took
    yield
    ranks.drop_standby()


def _standing_pids() -> list[int]:
    return [pid for _shape, pids in ranks.standing_by() for pid in pids]


def test_a_warm_launch_takes_the_ranks_standing_by_and_each_job_gets_fresh_ones(
    monkeypatch, no_standby_left
):
    monkeypatch.delenv("GPULAB_NO_STANDBY", raising=False)
    first = ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    assert ranks.standing_by() == []  # nothing starts until the caller is idle
    ranks.replenish()
    [(shape, waiting)] = ranks.standing_by()
    assert shape == (2, "gloo", False) and all(pid_alive(p) for p in waiting)
    second = ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    assert [v["pid"] for v in second] == waiting  # the job ran on the ranks standing by
    assert all(v["sum"] == [3.0] * 4 for v in second)
    assert not {v["pid"] for v in first} & set(waiting)  # processes never serve two jobs
    assert wait_gone(waiting, 2.0) == []
    # another shape is started fresh, and the set of the old shape is not kept for it
    ranks.replenish()
    kept = _standing_pids()
    third = ranks.launch(Context(), rank_fns.sum_of_ranks, 3, (1.0,), backend="gloo", warm=True)
    assert not {v["pid"] for v in third} & set(kept)
    ranks.replenish()
    assert [s for s, _ in ranks.standing_by()] == [(3, "gloo", False)]
    assert wait_gone(kept, 2.0) == []  # the 2-rank set stood by for a shape no longer taken


def test_a_launch_that_is_not_warm_uses_none_and_a_job_that_takes_none_stops_them(
    monkeypatch, no_standby_left
):
    monkeypatch.delenv("GPULAB_NO_STANDBY", raising=False)
    ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    ranks.replenish()
    waiting = _standing_pids()
    cold = ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo")
    assert not {v["pid"] for v in cold} & set(waiting)  # an experiment's ranks are its own
    assert _standing_pids() == waiting
    ranks.replenish()  # a check that took none (it failed before its ranks): they stay
    assert _standing_pids() == waiting
    ranks.drop_standby()  # what the worker does before a job that takes none
    assert ranks.standing_by() == [] and wait_gone(waiting, 2.0) == []


def test_no_ranks_stand_by_when_switched_off_or_left_idle(monkeypatch, no_standby_left):
    monkeypatch.setenv("GPULAB_NO_STANDBY", "1")
    ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    ranks.replenish()
    assert ranks.standing_by() == []
    monkeypatch.delenv("GPULAB_NO_STANDBY")
    monkeypatch.setattr(ranks, "STANDBY_IDLE_S", 0.5)
    ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    ranks.replenish()
    waiting = _standing_pids()
    assert len(waiting) == 2
    end = time.monotonic() + 30
    while ranks.standing_by() and time.monotonic() < end:
        time.sleep(0.05)
    assert ranks.standing_by() == [] and wait_gone(waiting, 2.0) == []


def test_a_set_standing_by_that_died_is_not_handed_a_job(monkeypatch, no_standby_left):
    monkeypatch.delenv("GPULAB_NO_STANDBY", raising=False)
    ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    ranks.replenish()
    waiting = _standing_pids()
    os.kill(waiting[1], signal.SIGKILL)
    assert wait_gone(waiting[1:], 5.0) == []
    values = ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
    assert all(v["sum"] == [3.0] * 4 for v in values)
    assert not {v["pid"] for v in values} & set(waiting)
    assert wait_gone(waiting, 2.0) == []  # its living rank was stopped


STANDING_PARENT = textwrap.dedent(
    """
    import os, sys, time
    from gpulab.experiments.base import Context
    from gpulab.core import ranks
    from gpulab.testing import ranks as rank_fns
    if __name__ == "__main__":
        ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo", warm=True)
        ranks.replenish()
        pids = [pid for _shape, ps in ranks.standing_by() for pid in ps]
        with open(sys.argv[1], "w") as f:
            f.write(" ".join(map(str, pids)))
        time.sleep(3600)
    """
)


def test_ranks_standing_by_end_with_a_parent_killed_with_sigkill(tmp_path):
    pids_file = tmp_path / "pids"
    script = tmp_path / "parent.py"
    script.write_text(STANDING_PARENT)
    env = _child_env()
    env.pop("GPULAB_NO_STANDBY", None)
    _kill_the_parent_of_its_ranks(
        [sys.executable, str(script), str(pids_file)], env, pids_file, 5.0
    )


FIRST_FROM_A_THREAD = textwrap.dedent(
    """
    import threading
    from gpulab.core import ranks
    from gpulab.experiments.base import Context
    from gpulab.testing import ranks as rank_fns
    if __name__ == "__main__":
        def first():
            ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo")
        t = threading.Thread(target=first)
        t.start()
        t.join()
        # the fork server the thread's launch started outlives the thread
        values = ranks.launch(Context(), rank_fns.sum_of_ranks, 2, (1.0,), backend="gloo")
        print("second", values[0]["sum"])
    """
)


def test_the_fork_server_outlives_the_thread_whose_launch_started_it(tmp_path):
    """A rank pool launches from its own thread, which ends with the pool: the fork server it
    started got PDEATHSIG then, and the next check read "unexpected EOF" from it."""
    script = tmp_path / "first_from_a_thread.py"
    script.write_text(FIRST_FROM_A_THREAD)
    env = _child_env()
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "second [3.0, 3.0, 3.0, 3.0]" in done.stdout
