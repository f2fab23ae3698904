"""Grades measured here and certified: the yardstick timed in the same rounds as the learner's
code, the interval on the ratio, more rounds while the interval holds a grade line, the GPU's
clocks and throttling recorded over the window (a throttled window retimed, then named), the
yardstick's record on this device, and the ratio rules' saving against our own solution.

Everything here runs without a GPU: the clocks are a scripted fake, NVML is the project's fake.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import numpy as np
import pytest

from gpulab.core.devices import DeviceInfo, Inventory
from gpulab.core.interval import median_interval, median_ranks
from gpulab.core.rounds import Contender, Rounds
from gpulab.exercises import api, saving, speed
from gpulab.exercises import yardstick as ys
from gpulab.exercises.loader import find
from gpulab.exercises.report import timing_lines
from gpulab.telemetry import window as window_mod
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.window import ClockWindow
from gpulab.testing.fake_nvml import FakeNvml

# ------------------------------------------------------------------------------- the interval


def test_the_median_interval_has_its_coverage_from_the_binomial():
    # n = 9: the 2nd smallest and 2nd largest hold the median with 96.1%; n = 15: 4th, 96.5%
    assert median_ranks(9)[:2] == (1, 7) and median_ranks(9)[2] == pytest.approx(0.9609, abs=1e-4)
    assert median_ranks(15)[:2] == (3, 11) and median_ranks(15)[2] >= 0.95
    assert median_ranks(5) == (0, 4, pytest.approx(0.9375))  # too few for 95%: the extremes
    iv = median_interval([0.80, 0.95, 0.90, 0.86, 0.88, 0.87, 0.99, 0.89, 0.84])
    assert (iv.lo, iv.median, iv.hi) == (0.84, 0.88, 0.95)
    assert iv.straddles([0.35, 0.6, 0.85]) == [0.85] and not iv.straddles([0.6])


def test_the_interval_holds_the_true_median_as_often_as_it_says():
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):  # long-tailed noise, as timings have: true median of 1 + lognormal is 2
        iv = median_interval(1 + rng.lognormal(0.0, 0.5, 15))
        hits += iv.contains(2.0)
    assert 0.94 <= hits / 2000 <= 0.99


# ------------------------------------------------------------------------------- the rounds


class ScriptedClock:
    """perf_counter for the rounds: each contender's call advances it by its next duration."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def contender(self, name: str, durations: list[float], log: list[str]) -> Contender:
        it = iter(durations * 1000)

        def call() -> None:
            log.append(name)
            self.t += next(it)

        return Contender(name, call)


def test_rounds_rotate_the_order_and_pair_each_rounds_times(monkeypatch):
    from gpulab.core import rounds as rounds_mod

    clock, log = ScriptedClock(), []
    monkeypatch.setattr(rounds_mod, "_now", clock)
    r = Rounds(
        [
            clock.contender("you", [2.0], log),
            clock.contender("yardstick", [1.0], log),
            clock.contender("library", [4.0], log),
        ]
    )
    r.extend(3)
    assert log == ["you", "yardstick", "library", "yardstick", "library", "you"] + [
        "library",
        "you",
        "yardstick",
    ]
    assert r.ratios("yardstick", "you") == [0.5, 0.5, 0.5]
    assert r.timing("library").median_s == 4.0 and r.timing("you").runs == 3
    r.reset()
    assert r.done == 0 and r.times["you"] == []


def _rounds_with(monkeypatch, learner: list[float]) -> Rounds:
    from gpulab.core import rounds as rounds_mod

    clock, log = ScriptedClock(), []
    monkeypatch.setattr(rounds_mod, "_now", clock)
    return Rounds([clock.contender("you", learner, log), clock.contender("yardstick", [1.0], log)])


def test_an_interval_that_holds_a_grade_line_buys_more_rounds(monkeypatch):
    plan = speed.Plan(
        warmup=0, min_rounds=9, rounds=9, budget_s=1, max_rounds=45, extra_s=60, batch=6
    )
    # yours takes 1/0.80 or 1/0.90 of the yardstick's time, alternately: the fraction sits
    # near the gold line (0.85), and nine rounds cannot tell which side
    near = _rounds_with(monkeypatch, [1 / 0.80, 1 / 0.90, 1 / 0.90, 1 / 0.80, 1 / 0.86])
    near.extend(9)
    added = speed._certify(near, [0.35, 0.6, 0.85], plan, paired=True)
    assert added > 0 and near.done == 9 + added
    assert near.done == 45 or not median_interval(near.ratios("yardstick", "you")).straddles([0.85])
    # a fraction far from every line is settled by the first rounds
    far = _rounds_with(monkeypatch, [1 / 0.5])
    far.extend(9)
    assert speed._certify(far, [0.35, 0.6, 0.85], plan, paired=True) == 0 and far.done == 9


# ------------------------------------------------------------------------------- the window


def _window(fake: FakeNvml) -> ClockWindow:
    inv = Inventory(devices=[DeviceInfo(index=0, name="fake", kind="cuda")])
    return ClockWindow(inv, 0, nvml=NvmlSession(nvml=fake))


def test_a_calm_window_records_clocks_power_and_no_throttling():
    fake = FakeNvml("full")
    gpu = fake.gpus[0]
    gpu.clocks, gpu.reasons, gpu.power_mw = (1980, 2619), 0x0, 400_000
    w = _window(fake).open(0.0)
    gpu.energy_mj += 40_000  # 40 J over the window's 0.1 s: 400 W
    w.mark(0.05)
    w.close(0.1)
    got = w.summary()
    assert got["sm_clock_mhz"] == {"min": 1980, "max": 1980} and got["power_w"] == 400.0
    assert not got["throttled"] and got["throttle"] == [] and got["reasons"] == ["none"]


def test_a_window_held_at_the_power_limit_or_hot_is_throttled_and_says_why():
    fake = FakeNvml("full")
    gpu = fake.gpus[0]
    gpu.reasons, gpu.clocks = 0x0, (1980, 2619)
    w = _window(fake).open(0.0)
    gpu.reasons, gpu.clocks = 0x4, (1500, 2619)  # the power cap, mid-window
    w.mark(0.05)
    gpu.violation_ns = {1: 30_000_000}  # 30 ms under the thermal policy
    w.close(0.1)
    got = w.summary()
    assert got["throttled"] and "power cap" in got["throttle"]
    assert "thermal limit for 30 ms" in got["throttle"]
    assert got["sm_clock_mhz"] == {"min": 1500, "max": 1980}
    without = _window(FakeNvml("no-library")).open(0.0)
    assert without.summary() == {"na": without.na, "throttled": False} and without.na


# ------------------------------------------------------------------ the whole timing, on a CPU


def _spec(seconds: dict[str, float]):
    import time as _time

    def busy(s: float) -> None:
        end = _time.perf_counter() + s
        while _time.perf_counter() < end:
            pass

    def make(learner_s: float) -> api.TimingSpec:
        return api.TimingSpec(
            setup=lambda i: [0],
            learner=lambda s: busy(learner_s),
            library=lambda s: busy(seconds["library"]),
            library_name="lib",
            work=1e9,
            metric="GB/s",
            ceiling="copy",
            sync="none",
            sets=2,
        )

    return make(seconds["you"]), make(seconds["yardstick"])


def _actx(gpu: bool = False) -> api.Context:
    return api.Context(
        rng=np.random.default_rng(0), seed=0, gpu=gpu, cupy=False, device="cpu", quick=False
    )


def _scripted_windows(monkeypatch, windows: list[dict]) -> None:
    """speed's clock windows replaced by ones that report `windows` in turn, then calm ones."""

    class Window:
        def __init__(self, *a, **k):
            self.summary_ = windows.pop(0) if windows else {"throttled": False}

        def open(self, now):
            return self

        def mark(self, now):
            pass

        def close(self, now):
            pass

        def summary(self):
            return self.summary_

    monkeypatch.setattr(speed, "ClockWindow", Window)
    monkeypatch.setattr(speed, "_lead", lambda spec, actx, watch: None)
    monkeypatch.setattr(speed, "gpu_state", lambda inv, i: {"na": "fake"})
    monkeypatch.setattr(speed, "_ceiling", lambda *a: {"name": "copy", "value": None})


def test_a_throttled_window_is_timed_again_then_named(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    windows: list[dict] = [
        {"throttled": True, "throttle": ["power cap"]},
        {"throttled": True, "throttle": ["power cap"]},
    ]

    _scripted_windows(monkeypatch, windows)
    you, yard = _spec({"you": 0.002, "yardstick": 0.001, "library": 0.001})
    ex = find("vector-add")
    choice = ys.choose(ex)
    actx = _actx(gpu=True)  # a GPU's path, its timing by perf_counter (sync "none")
    ctx = SimpleNamespace(inventory=Inventory(), progress=lambda *a: None)
    out = speed.time_and_grade(you, ex, actx, ctx, yard=speed.YardRun(choice, yard))
    assert out["retimed"] and out["window"]["throttled"]
    lines = "\n".join(timing_lines(out))
    assert "the GPU was held back while timed: power cap (timed again; it held)" in lines
    assert 0.4 <= out["of_yardstick"]["figure"] <= 0.6 and out["grade"] == "bronze"
    # a throttled window is not kept as the yardstick's record: only a calm one is
    assert ys.last(ex.id, ys.key_for(ctx.inventory, 0, cpu=False)) is None


def test_the_grade_is_the_ratio_to_the_yardstick_with_its_interval_and_record(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(speed, "_ceiling", lambda *a: {"name": "copy", "value": None})
    ex = find("vector-add")
    choice = ys.choose(ex)
    ctx = SimpleNamespace(inventory=Inventory(), progress=lambda *a: None)
    you, yard = _spec({"you": 0.001, "yardstick": 0.001, "library": 0.0005})
    out = speed.time_and_grade(you, ex, _actx(), ctx, yard=speed.YardRun(choice, yard))
    r = out["of_yardstick"]
    assert r["lo"] <= r["figure"] <= r["hi"] and 0.8 < r["figure"] < 1.25
    assert out["yardstick"]["label"] == "reference" and out["rounds"] >= speed.CPU.min_rounds
    assert out["window"]["na"] and not out["retimed"]
    kept = ys.last(ex.id, ys.key_for(ctx.inventory, 0, cpu=True))
    assert kept and kept["value"] == pytest.approx(out["yardstick"]["value"])
    lines = "\n".join(timing_lines(out))
    assert "yours / reference:" in lines and "median and 95% interval" in lines
    assert "GPU while timed: n/a (CPU mode: no GPU to read)" in lines


def test_a_slowed_yardstick_is_graded_against_its_record_and_the_record_never_drops(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    ex = find("vector-add")
    choice = ys.choose(ex)
    key = "cpu-test"
    ys.observe(ex, choice, key, value=100.0, fraction=0.9, metric="GB/s", ceiling="copy")
    ys.observe(ex, choice, key, value=40.0, fraction=0.4, metric="GB/s", ceiling="copy")
    assert ys.record(ex, choice, key)["value"] == 100.0  # the best stays
    assert ys.record(ex, choice, key)["seen"] == 2
    # another version of the yardstick's file or check: the record no longer applies
    monkeypatch.setattr(ys, "fingerprint", lambda ex, choice: "other")
    assert ys.record(ex, choice, key) is None
    assert "reached 100 GB/s on this device" in ys.words(ex, key)


def test_a_grade_against_the_record_shows_the_records_interval(monkeypatch, tmp_path):
    """A slowed yardstick on a GPU: the figure is your speed over its record here, and so is the
    interval beside it (a check showed "0.89 [0.96-1.34]": the record's figure with the paired
    rounds' interval). On the CPU the paired rounds grade."""
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(ys, "key_for", lambda *a, **k: "cpu-test")
    ex = find("vector-add")
    choice = ys.choose(ex)
    ys.observe(ex, choice, "cpu-test", value=100.0, fraction=0.9, metric="GB/s", ceiling="copy")
    yours = [0.0120, 0.0125, 0.0130, 0.0124, 0.0126, 0.0122, 0.0128, 0.0125, 0.0127]  # ~80 GB/s
    times = {speed.YOU: yours, speed.YARD: [0.02] * 9}  # the yardstick at 50 of its 100 GB/s
    rounds = SimpleNamespace(times=times)
    rounds.ratios = lambda num, den: Rounds.ratios(rounds, num, den)
    out = {
        "metric": "GB/s",
        "work": 1e9,
        "yardstick": {"fraction": 0.5},
        "ceiling": {"name": "copy"},
    }
    actx = SimpleNamespace(device_index=0, gpu=True, cupy=False, quick=True)
    yard = SimpleNamespace(choice=choice)
    speed._grade_by_yardstick(
        out, rounds, ex, yard, SimpleNamespace(inventory=None), actx, 80.0, 50.0, {}
    )
    r = out["of_yardstick"]
    assert r["basis"] == "record" and r["figure"] == pytest.approx(0.8, abs=0.01)
    assert r["lo"] <= r["figure"] <= r["hi"] < 1.0  # not the paired rounds' 1.5-1.7
    assert "below its best here (100)" in out["yardstick"]["slowed"]
    # a yardstick at its usual speed: the paired rounds, as always
    times[speed.YARD] = [0.0105] * 9
    speed._grade_by_yardstick(
        out, rounds, ex, yard, SimpleNamespace(inventory=None), actx, 80.0, 95.2, {}
    )
    assert out["of_yardstick"]["basis"] == "rounds"
    assert out["of_yardstick"]["lo"] <= out["of_yardstick"]["figure"] <= out["of_yardstick"]["hi"]
    # the same slowed rounds on the CPU: a busy machine slowed both, the paired rounds grade
    times[speed.YARD] = [0.02] * 9
    out.pop("yardstick", None)
    out["yardstick"] = {"fraction": 0.5}
    cpu = SimpleNamespace(device_index=0, gpu=False, cupy=False, quick=True)
    speed._grade_by_yardstick(
        out, rounds, ex, yard, SimpleNamespace(inventory=None), cpu, 80.0, 50.0, {}
    )
    assert out["of_yardstick"]["basis"] == "rounds" and "slowed" not in out["yardstick"]
    assert out["of_yardstick"]["figure"] == pytest.approx(1.6, abs=0.05)


# ------------------------------------------------------------------------- the ratio rules


def test_a_saving_rule_asks_half_of_ours_and_steps_aside_where_ours_gains_nothing():
    ok, note = saving.judge(saving.Saving(10.0, 5.0, 4.0, 7), what="call", baseline="eager")
    assert ok is None and note == ""
    bad, _ = saving.judge(saving.Saving(10.0, 8.0, 4.0, 7), what="call", baseline="eager")
    assert "saves 33% of what ours saves, at least 50%" in bad.message
    none, note = saving.judge(saving.Saving(10.0, 10.0, 9.5, 7), what="call", baseline="eager")
    assert none is None and "speed not graded" in note and "1.05x" in note


def test_a_window_beside_another_process_is_shared_and_names_it(monkeypatch):
    """Another process's kernels during the window make it shared, named by pid; gpulab's own
    (this process, its parent, their children) and a process that only holds memory do not;
    samples without this process (a container's host pids) claim nothing; a GPU that does
    not say leaves it unread."""
    fake = FakeNvml("full")
    gpu = fake.gpus[0]
    me = os.getpid()
    monkeypatch.setattr(window_mod, "own_process", lambda pid, root="/proc": pid in (me, 1))
    gpu.proc_util = {me: (90, 40), 1: (10, 0), 777_001: (0, 0)}  # ours, our parent, idle
    w = _window(fake).open(0.0)
    w.close(0.1)
    got = w.summary()
    assert got["others"] == [] and not got["shared"]
    gpu.proc_util[777_002] = (85, 30)  # another program's kernels
    w = _window(fake).open(0.0)
    w.close(0.1)
    got = w.summary()
    assert got["shared"] and [o["pid"] for o in got["others"]] == [777_002]
    assert got["others"][0]["percent"] == 85
    gpu.proc_util = {777_002: (85, 30), 777_003: (50, 10)}  # none of ours: other pids' space
    w = _window(fake).open(0.0)
    w.close(0.1)
    assert w.summary()["others"] is None and not w.summary()["shared"]
    gpu.proc_util = {}  # NVML: no process used the GPU since the window opened
    w = _window(fake).open(0.0)
    w.close(0.1)
    assert w.summary()["others"] == []
    gpu.unsupported.add("nvmlDeviceGetProcessUtilization")
    w = _window(fake).open(0.0)
    w.close(0.1)
    assert w.summary()["others"] is None and not w.summary()["shared"]


def test_a_short_window_still_names_a_process_whose_latest_sample_came_just_before(monkeypatch):
    """On an H200 (driver 580) NVML keeps one sample a process, its latest, written about once
    a second: a window of a few milliseconds opened between two of the busy program's samples
    held none of them, and a retimed zip-add beside a busy program was called unshared. The
    question reaches back a second; and since this process's own sample was not in the window
    either, the driver's pids are known to be ours by its list of compute processes."""
    fake = FakeNvml("full")
    gpu = fake.gpus[0]
    me = os.getpid()
    monkeypatch.setattr(window_mod, "own_process", lambda pid, root="/proc": pid == me)
    now_us = int(time.time() * 1e6)
    gpu.processes = {me: 1 << 30, 628: 1 << 30}
    gpu.proc_util = {628: (99, 23, now_us - 400_000)}  # 0.4 s before the window opened
    w = _window(fake).open(0.0)
    w.close(0.01)
    got = w.summary()
    assert got["shared"] and [o["pid"] for o in got["others"]] == [628], got
    gpu.proc_util = {628: (99, 23, now_us - 3_000_000)}  # gone three seconds ago: not now
    w = _window(fake).open(0.0)
    w.close(0.01)
    assert w.summary()["others"] == [] and not w.summary()["shared"]
    # a container: the driver lists host pids, not this one, among the compute processes
    gpu.processes = {3_100_417: 1 << 30, 3_100_999: 1 << 30}
    gpu.proc_util = {3_100_999: (99, 23, now_us - 400_000)}
    w = _window(fake).open(0.0)
    w.close(0.01)
    assert w.summary()["others"] is None and not w.summary()["shared"]


def test_own_processes_are_this_one_its_parent_and_their_children(tmp_path):
    me, parent = os.getpid(), os.getppid()
    for pid, ppid, name in ((11, me, "ranks (x)"), (12, parent, "spare"), (13, 99, "other")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({name}) S {ppid} 1 1 0\n")
    own = [p for p in (me, parent, 11, 12, 13, 14) if window_mod.own_process(p, str(tmp_path))]
    assert own == [me, parent, 11, 12]  # 13's parent is another; 14 is not in this table


def test_a_shared_window_is_timed_again_then_named(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    shared = {
        "throttled": False,
        "throttle": [],
        "shared": True,
        "others": [{"pid": 4242, "name": "python3", "percent": 85}],
    }
    windows: list[dict] = [shared, dict(shared)]

    _scripted_windows(monkeypatch, windows)
    you, yard = _spec({"you": 0.002, "yardstick": 0.001, "library": 0.001})
    ex = find("vector-add")
    choice = ys.choose(ex)
    ctx = SimpleNamespace(inventory=Inventory(), progress=lambda *a: None)
    out = speed.time_and_grade(you, ex, _actx(gpu=True), ctx, yard=speed.YardRun(choice, yard))
    assert out["retimed"] and out["window"]["shared"]
    lines = "\n".join(timing_lines(out))
    assert (
        "another process used this GPU while it was timed: pid 4242 (python3, up to 85%)" in lines
    )
    assert "(timed again; it was still there)" in lines and "shared with pid 4242" in lines
    # a shared window is not kept as the yardstick's record
    assert ys.last(ex.id, ys.key_for(ctx.inventory, 0, cpu=False)) is None


def test_a_failed_check_beside_another_process_says_so(monkeypatch, tmp_path):
    """A check that fails while another program ran kernels on the GPU ends its message with
    the pid and a word that a timing it compared may be off; a passing check says nothing."""
    from gpulab.exercises import job

    real = job.exercise_context

    def on_a_gpu(*a, **k):
        actx = real(*a, **k)
        actx.gpu = True  # the window is a GPU's; the file below fails before any device work
        return actx

    class Shared:
        def __init__(self, *a, **k):
            pass

        def open(self, now, since_us=None):
            return self

        def close(self, now):
            pass

        def summary(self):
            return {"shared": True, "others": [{"pid": 4242, "name": "train.py", "percent": 97}]}

    monkeypatch.setattr(job, "exercise_context", on_a_gpu)
    monkeypatch.setattr(job, "ClockWindow", Shared)
    broken = tmp_path / "broken.py"
    broken.write_text("def add(:\n")
    result, _ = job.check_inline("vector-add", str(broken), 1, quick=True)
    assert not result.passed
    assert result.message.endswith(
        "(another process used this GPU during the check: pid 4242 (train.py, up to 97%); "
        "a timing the check compared may be off: check again when it is idle)"
    )
