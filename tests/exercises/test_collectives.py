"""The machinery of the collective exercises (ring-allreduce, reduce-scatter-all-gather,
ddp-overlap): the rules inside a rank, the pool of ranks the timing drives, the deadline that
names a deadlock, and the path the catalog's own checks do not reach on a CPU (the timed
hooks)."""

from __future__ import annotations

import asyncio
import os
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from gpulab.core import ranks
from gpulab.exercises import api, collective_checks, rank_pool
from gpulab.exercises.loader import find
from gpulab.exercises.sandbox import fresh_name, load_learner, load_text
from gpulab.experiments.base import Context
from gpulab.testing import collectives as rank_fns


def _ctx(seed: int = 3) -> api.Context:
    return api.Context(
        rng=np.random.default_rng(seed), seed=seed, gpu=False, cupy=False, device="cpu", quick=True
    )


def _check(ex_id: str):
    ex = find(ex_id)
    return ex, load_text(ex.check_path.read_text(), ex.check_path, fresh_name("check", "test"))


def test_the_rules_refuse_collectives_and_unwaited_requests_in_a_rank():
    said = ranks.launch(Context(), rank_fns.p2p_rules, 2, backend="gloo")[0]
    assert said["exchange"] == "" and said["batched"] == ""  # batch_isend_irecv's own requests
    for way in ("all_reduce", "group", "functional"):
        assert said[way].startswith("the library's all-reduce is not allowed here"), said[way]
    assert "`dist.all_reduce(t)`" not in said["functional"]  # not the learner's file's line
    assert said["caught"].startswith("the library's all-reduce")  # a caught refusal still counts
    assert "the request of an isend" in said["unwaited"] and "never waited on" in said["unwaited"]
    assert said["hook_future"] == ""
    assert said["hook_blocking"].startswith("your hook waits for its all-reduce")
    assert "is never waited on" in said["hook_never_waited"]


def _pool(check_text: str, world: int = 2, deadline_s: float = 20.0) -> rank_pool.RankPool:
    path = Path(f"/nowhere/check_{time.time_ns()}.py")
    return rank_pool.RankPool(str(path), textwrap.dedent(check_text), world, "gloo", deadline_s)


POOL_CHECK = """
    import time

    class State:
        def __init__(self, rc, functions):
            self.rc = rc

        def echo(self, value):
            return (self.rc.rank, value)

        def fail(self, rank):
            if self.rc.rank == rank:
                raise ValueError("broke on purpose")
            return "fine"

        def hang(self):
            time.sleep(3600)

    def pool_start(rc, functions):
        return State(rc, functions)
"""


def test_the_pool_answers_every_rank_in_order_and_its_ranks_end_with_close():
    pool = _pool(POOL_CHECK)
    assert pool.ask("echo", 7) == [(0, 7), (1, 7)]
    assert pool.ask("echo", "x") == [(0, "x"), (1, "x")]
    thread = pool._thread
    pool.close()
    assert thread is not None and not thread.is_alive()  # the launcher returned: ranks ended
    with pytest.raises(rank_pool.PoolFailed, match="stopped already"):
        pool.ask("echo", 1)


def test_a_failing_rank_or_a_silent_one_stops_the_pool_with_one_line():
    pool = _pool(POOL_CHECK)
    with pytest.raises(rank_pool.PoolFailed, match=r"rank 1: ValueError: broke on purpose"):
        pool.ask("fail", 1)
    assert pool.closed
    pool = _pool(POOL_CHECK, deadline_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(rank_pool.PoolFailed, match="did not finish its hang within 1 s"):
        pool.ask("hang")
    assert time.monotonic() - t0 < 30
    assert pool.closed and not pool._thread.is_alive()


DEADLOCK = """
import torch
import torch.distributed as dist


def ring_all_reduce(t):
    rank, world = dist.get_rank(), dist.get_world_size()
    got = torch.empty_like(t)
    dist.send(t, (rank + 1) % world)  # every rank sends first: none ever receives
    dist.recv(got, (rank - 1) % world)
    t += got
"""


def test_ranks_that_wait_for_each_other_are_stopped_at_the_deadline(tmp_path, monkeypatch):
    monkeypatch.setattr(collective_checks, "DEADLINE_S", 2.0)
    learner = tmp_path / "ring.py"
    learner.write_text(DEADLOCK)
    ex, check = _check("ring-allreduce")
    _, fn = load_learner(learner, "deadlock", ex.entry)
    case = collective_checks.case(_ctx(), 2, [4096])
    with pytest.raises(
        api.CheckError, match="had not finished after 2 s: a deadlock.*batch_isend_irecv"
    ):
        check.run(fn, case, _ctx())


LONE_PAIR = """
import torch
import torch.distributed as dist


def ring_all_reduce(t):
    rank, world = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % world, (rank - 1) % world
    chunks = t.tensor_split(world)
    got = torch.empty_like(chunks[0])
    for s in range(world - 1):
        into = chunks[(rank - s - 1) % world]
        requests = [dist.isend(chunks[(rank - s) % world], right), dist.irecv(got[: into.numel()], left)]
        for r in requests:
            r.wait()
        into += got[: into.numel()]
    for s in range(world - 1):
        if rank % 2:  # the all-gather by parity: odd ranks receive first
            dist.irecv(chunks[(rank - s) % world], left).wait()
        requests = [dist.isend(chunks[(rank + 1 - s) % world], right)]
        if rank % 2 == 0:
            requests.append(dist.irecv(chunks[(rank - s) % world], left))
        for r in requests:
            r.wait()
"""


def test_a_deadlock_stops_the_check_at_its_first_case(tmp_path, monkeypatch):
    """Every case would wait out the deadline again (three world sizes: 90 s on a laptop where
    one case says it all): the check ends at the first deadlocked case."""
    import exercise_checks

    monkeypatch.setattr(collective_checks, "DEADLINE_S", 2.0)
    learner = tmp_path / "ring.py"
    learner.write_text(DEADLOCK)
    ex = find("ring-allreduce")
    result = exercise_checks.check(ex, learner, 11)
    assert result.verdict == "fail" and "a deadlock" in result.message
    assert [row.passed for row in result.cases] == [False] + [None] * (len(result.cases) - 1)


def test_gloo_runs_a_lone_isend_before_its_irecv_as_nccl_does(tmp_path, monkeypatch):
    """The textbook pair, an isend then an irecv on every rank, deadlocks on NCCL (a rank's
    sends and receives run in order there); gloo would let it through. The check completes a
    lone request where it is posted on gloo too: the same code stops on a laptop with the
    message a GPU box gives. By parity, or as one group, the pairs pass."""
    monkeypatch.setattr(collective_checks, "DEADLINE_S", 3.0)
    ex, check = _check("ring-allreduce")
    lone = tmp_path / "lone.py"
    lone.write_text(LONE_PAIR)
    _, fn = load_learner(lone, "lone", ex.entry)
    ctx = _ctx()
    case = collective_checks.case(ctx, 2, [4096])
    with pytest.raises(api.CheckError, match="a deadlock.*batch_isend_irecv"):
        check.run(fn, case, ctx)
    # the reduce-scatter's pairs as one group, the all-gather's by parity: both orders NCCL runs
    grouped = LONE_PAIR.replace(
        "requests = [dist.isend(chunks[(rank - s) % world], right), dist.irecv(got[: into.numel()], left)]",
        "requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[(rank - s) % world], right), "
        "dist.P2POp(dist.irecv, got[: into.numel()], left)])",
    )
    assert grouped != LONE_PAIR
    fixed = tmp_path / "grouped.py"
    fixed.write_text(grouped)
    _, fn = load_learner(fixed, "grouped", ex.entry)
    for world in (2, 3):
        case = collective_checks.case(ctx, world, [5, 4096])
        got = check.run(fn, case, ctx)
        assert check.compare(check.expected(case, ctx), got, case, ctx) is None


def test_the_overlap_check_times_the_hooks_and_says_what_is_exposed():
    """The timed case (on GPUs: every GPU up to 4, NCCL) run small on gloo: every hook's step
    is timed in rounds, and the verdict names each one's exposed communication."""
    ex, check = _check("ddp-overlap")
    _, fn = load_learner(ex.solution_path, "overlap", ex.entry)
    case = check.timed_case(2, "gloo", rounds=2, width=64, layers=2, batch=16, steps=2, warmup=1)
    got = check.run(fn, case, _ctx())
    times = got[0]["times"]
    assert set(times) == {"yours", "ours", "waits", "alone"}
    assert all(len(v) == 2 and min(v) > 0 for v in times.values())
    ctx = _ctx()
    bad = check.judge(got[0], ctx)
    said = bad.message if bad is not None else " ".join(ctx.notes)
    assert "exposed communication a step on 2 GPUs: yours" in said
    assert "a hook that waits" in said and "DDP efficiency with ours" in said


def test_the_pool_leaves_no_rank_behind(monkeypatch, tmp_path):
    pids_file = tmp_path / "pids"
    monkeypatch.setenv(ranks.RANK_PIDS_ENV, str(pids_file))
    pool = _pool(POOL_CHECK)
    pool.ask("echo", 1)
    pids = [int(p) for p in pids_file.read_text().split()]
    del pool  # garbage: the finalizer stops the ranks
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_collective_is_read_against_the_library_not_one_devices_memory(monkeypatch):
    """busbw is bound by the links between GPUs: a percent of one device's memory copy (it read
    4% on two H200s) teaches nothing. The collectives name no calibrated ceiling, and their check
    does not wait for a calibration it would not use."""
    from types import SimpleNamespace

    from gpulab.core import peaks as pk
    from gpulab.exercises import speed
    from gpulab.exercises.loader import load_catalog

    ceilings = {ex.id: ex.ceiling for ex in load_catalog()}
    assert ceilings["ring-allreduce"] == ceilings["reduce-scatter-all-gather"] == pk.LINK
    assert ceilings["vector-add"] == "copy"

    def calibrate(*args, **kwargs):
        raise AssertionError("calibrated for a figure it does not use")

    monkeypatch.setattr(pk, "load_or_measure", calibrate)
    actx = SimpleNamespace(gpu=True, cupy=False, quick=False, device_index=0)
    out = speed._ceiling(SimpleNamespace(), actx, SimpleNamespace(ceiling=pk.LINK), [300.0])
    assert out["value"] is None and "links between GPUs" in out["why"]
    assert pk.peak_for(pk.Peaks.__new__(pk.Peaks), pk.LINK) is None


def _pids_in(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


async def test_a_repeat_check_through_the_worker_runs_on_ranks_it_started_while_idle(tmp_path):
    """After a collective check the worker, idle, starts the ranks the next check will take
    (gpulab.core.ranks, standing by); the next check takes them, and a job that takes none (an
    experiment, another exercise) leaves none standing by."""
    from gpulab.ex.session import Checker

    ex = find("ring-allreduce")
    pids_file = tmp_path / "pids"
    # the spare worker is off by the flag below; the CPU's gloo ranks (on a box with one GPU
    # the experiment at the end could not start 2 ranks)
    env = {ranks.RANK_PIDS_ENV: str(pids_file), "CUDA_VISIBLE_DEVICES": ""}
    async with Checker(quick=True, standby=False, env=env) as c:
        await c.client.wait_ready(120)
        result, _ = await c.check(ex, ex.solution_path, 1)
        assert result.passed, result.message
        used = set(_pids_in(pids_file))
        end = time.monotonic() + 60
        while len(set(_pids_in(pids_file)) - used) < 2 + 3 + 4 + 2 and time.monotonic() < end:
            await asyncio.sleep(0.05)  # three cases' ranks and the timing pool's, started after it
        waiting = set(_pids_in(pids_file)) - used
        assert len(waiting) == 11 and all(_alive(p) for p in waiting)
        result, _ = await c.check(ex, ex.solution_path, 2)
        assert result.passed, result.message
        # each set serves one job: had the check started its own, these would stand by still
        end = time.monotonic() + 10
        while any(_alive(p) for p in waiting) and time.monotonic() < end:
            await asyncio.sleep(0.05)
        assert not any(_alive(p) for p in waiting)
        job = await c.client.submit("allreduce", {"ranks": 2, "max_bytes": 64})
        final = await job.wait()
        assert final["type"] == "result", final
        end = time.monotonic() + 10
        while any(_alive(p) for p in _pids_in(pids_file)) and time.monotonic() < end:
            await asyncio.sleep(0.05)
        assert not any(_alive(p) for p in _pids_in(pids_file))


def test_only_a_collective_exercises_jobs_keep_the_ranks_standing_by():
    """The worker stops the ranks standing by before any other job: their memory (a CUDA
    context a rank on NCCL) would move that job's figures."""
    from gpulab.exercises import job, prewarm
    from gpulab.runner.worker.serve import takes_ranks

    check, prepare = job.EXPERIMENT.id, prewarm.EXPERIMENT_ID
    for ex_id in ("ring-allreduce", "reduce-scatter-all-gather", "ddp", "ddp-overlap"):
        assert takes_ranks({"experiment": check, "params": {"exercise": ex_id}})
        assert takes_ranks({"experiment": prepare, "params": {"exercise": ex_id}})
    assert not takes_ranks({"experiment": check, "params": {"exercise": "vector-add"}})
    assert not takes_ranks({"experiment": "allreduce", "params": {"ranks": 2}})
    assert not takes_ranks({"experiment": "no-such-job", "params": {}})
    assert not takes_ranks({"experiment": check, "params": {"exercise": "no-such-exercise"}})
