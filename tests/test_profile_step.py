"""Profiling a step: gpulab.core.step_trace, the profile-step experiment, its bench targets, the
profile-step exercise's judgement and `gpulab ex profile`, on the CPU. The exercise's files
(solution, starter, wrong/, right/) run in test_exercises_catalog.py; the GPU side in
test_profile_step_gpu.py."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpulab.benchmark import targets as bench_targets  # noqa: E402
from gpulab.core import step_trace as st  # noqa: E402
from gpulab.exercises import api  # noqa: E402
from gpulab.exercises.loader import load_catalog  # noqa: E402
from gpulab.experiments import profile_step as ps  # noqa: E402

EX = load_catalog().get("profile-step")


def _check():
    from gpulab.testing.checks import open_check  # why not importlib: its module doc

    return open_check(EX)


def _state(batch: int = 16, width: int = 32):
    params = ps.make_weights(torch, 3, width, "cpu", 0)
    momenta = [torch.zeros_like(p) for p in params]
    return params, momenta, ps.make_batches(torch, 6, batch, "cpu", 0)


def test_the_trace_counts_reads_and_operators_and_its_table_fits_80_columns():
    traces = {}
    for name, fn in ps.VERSIONS.items():
        params, momenta, batches = _state()
        fn(params, momenta, *batches[0])  # warm
        traces[name] = st.profile_steps(
            lambda i, fn=fn, p=params, m=momenta, b=batches: fn(p, m, *b[1 + i]), 2, gpu=False
        )
    slow, fixed = traces["slow"], traces["fixed"]
    assert slow.readbacks == 6 and fixed.readbacks == 0  # one .item() per parameter, 3 layers
    assert slow.syncs is None and slow.kernels is None  # a CPU has neither
    assert slow.ops > 10 * fixed.ops > 0, (slow.ops, fixed.ops)
    for t in traces.values():
        lines = st.table(t)
        assert all(len(line) <= 80 for line in lines), lines
        assert lines[0].startswith("operator (per step)")
    flagged = [line for line in st.table(slow) if line.endswith("<")]
    assert any("aten::_local_scalar_dense" in line for line in flagged)
    assert "6 readbacks" in st.summary_line(slow)


def test_the_trace_counts_operators_sized_by_the_data():
    """On a GPU each of these waits for the device to learn its output's size; a CPU run counts
    them by name, once each (masked_select also reads its size as a number: still one wait), and
    weighting by the mask counts none."""
    x, mask = torch.randn(64, 8), torch.rand(64) > 0.3

    def sized(fn):
        fn()
        return st.profile_steps(lambda i: fn(), 2, gpu=False)

    for fn, want in (
        (lambda: x[mask], 1),
        (lambda: (x[mask], torch.unique(mask.int())), 2),
        (lambda: x.masked_select(mask[:, None]), 1),
        (lambda: torch.nonzero(mask), 1),
        (lambda: (x * mask[:, None]).sum() / mask.sum(), 0),
    ):
        trace = sized(fn)
        assert trace.sized == want and trace.readbacks == 0, (want, trace.sized, trace.readbacks)
    flagged = [line for line in st.table(sized(lambda: x[mask])) if line.endswith("<")]
    assert any("aten::nonzero" in line for line in flagged)


def test_the_trace_names_the_function_a_read_came_from():
    params, momenta, batches = _state()
    source = ps.__file__.rsplit("/", 1)[-1]
    trace = st.profile_steps(
        lambda i: ps.slow_step(params, momenta, *batches[i]), 1, gpu=False, source=source
    )
    assert any(line.startswith("slow_step") for line in trace.lines), trace.lines


def test_the_slow_and_fixed_steps_train_alike():
    a, b = _state(batch=9), _state(batch=9)
    for i in range(3):
        la = ps.slow_step(a[0], a[1], *a[2][i])
        lb = ps.fast_step(b[0], b[1], *b[2][i])
        assert abs(float(la) - float(lb)) <= 1e-5 * abs(float(la))
    for pa, pb in zip(a[0], b[0], strict=True):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)
    # The clipping mattered: without it the weights would have gone elsewhere.
    grads_norm = torch.sqrt(sum((p.grad**2).sum() for p in a[0]))
    assert float(grads_norm) > ps.MAX_NORM


def test_time_steps_interleaves_and_hands_each_its_own_step_numbers():
    seen = {"a": [], "b": []}
    ticks = iter(range(1000))
    out = st.time_steps(
        {k: seen[k].append for k in seen},
        gpu=False,
        rounds=2,
        per_round=3,
        clock=lambda: float(next(ticks)),
    )
    assert seen["a"] == list(range(9)) and seen["b"] == list(range(9))
    assert out["a"]["median_s"] == pytest.approx(1 / 3)  # 1 tick per 3 steps


def test_the_experiment_runs_on_the_cpu_and_says_what_it_counted(cpu_inventory):
    from gpulab.experiments.inline import run_job

    events = []
    params = {"batch": 12, "width": 32, "layers": 3, "rounds": 2}
    run_job("inline", "profile-step", params, cpu_inventory, events.append)
    assert events[-1]["type"] == "result", events[-1]
    result = events[-1]["result"]
    s = result["summary"]
    assert s["readbacks_per_step"] == {"slow": 6.0, "fixed": 0.0}
    assert s["ops_per_step"]["slow"] > 5 * s["ops_per_step"]["fixed"]
    assert all(v["passed"] for v in result["verdicts"])
    text = next(a["text"] for a in result["artifacts"] if a["name"] == "profile")
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "on the CPU" in result["headline"] and "operators per step" in result["headline"]
    assert "needs a GPU" in result["unavailable"]["slow"]


def test_the_bench_targets_judge_speedup_and_syncs():
    summary = {
        "gpu": True,
        "speedup": 40.0,
        "step_s": {"slow": 0.04, "fixed": 0.001},
        "syncs_per_step": {"slow": 8.0, "fixed": 1.0},
        "kernels_per_step": {"slow": 2400.0, "fixed": 40.0},
    }
    runs = [{"experiment": "profile-step", "status": "result", "result": {"summary": summary}}]
    by = {c["name"]: c for c in bench_targets.syllabus_comparisons(runs)}
    speed = next(v for k, v in by.items() if k.startswith("profile-step: slow step time"))
    syncs = by["profile-step: device syncs per fixed step"]
    assert speed["status"] == "pass" and syncs["status"] == "miss"
    cpu = [{**runs[0], "result": {"summary": {**summary, "gpu": False}}}]
    assert not bench_targets.syllabus_comparisons(cpu)  # a CPU run judges nothing


def _trace(**kw):
    base = {
        "steps": 3,
        "gpu": True,
        "syncs": 0.0,
        "readbacks": 0.0,
        "kernels": 40.0,
        "ops": 40.0,
        "step_cpu_us": 500.0,
        "sync_calls": {},
        "rows": [],
        "lines": [],
    }
    return {**base, **kw}


def _gpu_ctx():
    return api.Context(rng=np.random.default_rng(1), seed=1, gpu=True, cupy=False, device="cuda:0")


def test_the_check_names_syncs_kernels_and_speed():
    check = _check()
    slow = _trace(syncs=8.0, readbacks=8.0, kernels=2400.0)
    ours = _trace(kernels=40.0)
    ok = {"slow": {"median_s": 0.04}, "yours": {"median_s": 0.001}, "ours": {"median_s": 0.001}}
    judge = check._judge_profile

    def got(trace, timing=None):
        out = {"trace": trace, "slow_trace": slow, "ours_trace": ours}
        return {**out, "timing": timing} if timing else out

    assert judge(got(_trace(), ok), _gpu_ctx()) is None
    synced = _trace(
        syncs=1.0, readbacks=1.0, sync_calls={"cudaStreamSynchronize": 3}, lines=["clip, x"]
    )
    msg = judge(got(synced, ok), _gpu_ctx()).message
    assert "cudaStreamSynchronize x1" in msg and "clip, x of your file" in msg
    # ours saves 2,360 kernels a step; a tenth of that may stay: at most 276
    looped = judge(got(_trace(kernels=2395.0)), _gpu_ctx()).message
    assert "2,395 kernels per step" in looped and "ours 40; at most 276 passes" in looped
    assert judge(got(_trace(kernels=270.0)), _gpu_ctx()) is None
    # speed: ours saves 39 ms of 40; yours saving 3 ms of it is too little
    slow_t = {"slow": {"median_s": 0.04}, "yours": {"median_s": 0.037}, "ours": {"median_s": 0.001}}
    msg = judge(got(_trace(), slow_t), _gpu_ctx()).message
    assert "saves 8% of what ours saves, at least 50%" in msg
    # a GPU where even ours is no faster than the slow step: speed is not graded, and said so
    ctx = _gpu_ctx()
    flat = {"slow": {"median_s": 0.01}, "yours": {"median_s": 0.01}, "ours": {"median_s": 0.0095}}
    assert judge(got(_trace(), flat), ctx) is None and "speed not graded" in ctx.notes[0]


def test_the_check_draws_a_profile_set_that_says_the_cpu_grades_no_speed():
    check = _check()
    ctx = api.Context(rng=np.random.default_rng(3), seed=3, gpu=False, cupy=False, device="cpu")
    cases = check.cases(ctx)
    assert [c.meta.get("profile", False) for c in cases] == [False, False, False, True]
    assert "graded on a GPU only" in cases[-1].name
    assert len(cases[-1].args["batches"]) == check.WARM + check.PROFILED + 1
    gpu_cases = check.cases(_gpu_ctx())
    rounds = (check.ROUNDS + 1) * check.PER_ROUND
    assert len(gpu_cases[-1].args["batches"]) == check.WARM + check.PROFILED + 1 + rounds
    # The mask matters in the reference: every batch has padding rows, and the float64 run
    # differs from one that trains on them too.
    case = cases[1]
    assert all(0 < keep.sum() < keep.size for _, _, keep in case.args["batches"])
    want = check.expected(case, ctx)
    everything = {
        **case.args,
        "batches": [(x, y, np.ones_like(k)) for x, y, k in case.args["batches"]],
    }
    unmasked = check.expected(dataclasses.replace(case, args=everything), ctx)
    assert len(want["losses"]) == 3
    assert all(abs(a - b) > 1e-4 for a, b in zip(want["losses"], unmasked["losses"], strict=True))


def test_gpulab_ex_profile_prints_both_steps(tmp_path, monkeypatch, capsys):
    from gpulab.cli import main

    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    assert main(["ex", "profile", "profile-step", "--inline"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the check says: your step runs 2 operator(s) per step whose output")
    assert "your step\n  0 readbacks, 2 data-sized ops (a sync each on a GPU)" in out
    assert "the slow step\n" in out and "aten::nonzero" in out
    assert "where the host would wait for the GPU: train_step, defined at line" in out
    assert all(len(line) <= 80 for line in out.splitlines()[2:])  # all but the check's words
    assert main(["ex", "profile", "profile-step", "--inline", "--json",
                 "--file", str(EX.solution_path)]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["yours"]["sized"] == 0 and summary["slow"]["sized"] == 2
    assert summary["yours"]["readbacks"] == summary["slow"]["readbacks"] == 0


def test_gpulab_ex_profile_refuses_a_missing_file(tmp_path, monkeypatch, capsys):
    from gpulab.cli import main

    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    code = main(["ex", "profile", "profile-step", "--file", str(tmp_path / "nope.py")])
    assert code == 2 and "no file" in capsys.readouterr().err
