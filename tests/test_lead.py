"""The spin queued ahead of each timed call's start event (gpulab.core.lead): where the grader
uses it, where it must not, and on a GPU that it hides the host's launch latency and nothing
else."""

from __future__ import annotations

import sys
import textwrap
import time
from contextlib import nullcontext
from types import SimpleNamespace

import pytest

from gpulab.core import timing
from gpulab.core.timing import Timer
from gpulab.exercises import report, speed
from gpulab.exercises.own_work import Watch


class _Clock:
    """Stands in for the CUDA-event clock: records the order of lead, start and call."""

    log: list[str] = []

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def sync(self) -> None:
        pass

    def time(self, fn, inner, lead=None):
        if lead is not None:
            lead()
        self.log.append("start")
        for _ in range(inner):
            fn()
        self.log.append("end")
        return 1e-4


@pytest.fixture
def fake_events(monkeypatch):
    _Clock.log = []
    monkeypatch.setattr(timing, "EventClock", _Clock)
    monkeypatch.setattr(timing, "sync_for", lambda kind: lambda: None)
    return _Clock.log


def test_timer_queues_the_lead_ahead_of_every_start_event_and_never_in_warmup(fake_events):
    log = fake_events
    t = Timer(warmup=2, repeats=5, budget_s=10, min_runs=5).measure(
        lambda: log.append("call"), sync="cupy", lead=lambda: log.append("lead")
    )
    assert t.runs == 5
    timed = log[log.index("lead") :]
    # the cold and warm-up calls come first, with no lead; then lead, start, call, end each run
    assert log[: log.index("lead")] == ["call", "call"]
    assert timed == ["lead", "start", "call", "end"] * 5


def test_timer_without_a_lead_queues_none(fake_events):
    log = fake_events
    Timer(warmup=0, repeats=3, min_runs=3).measure(
        lambda: log.append("call"), sync="torch", cold=False
    )
    assert log == ["start", "call", "end"] * 3


def _spec(lead=True, sync="cupy"):
    return SimpleNamespace(lead=lead, sync=sync)


def test_lead_is_chosen_only_on_a_device_with_no_stream_of_the_learners(monkeypatch):
    made = []
    monkeypatch.setattr(speed, "lead_spin", lambda sync, dev: made.append((sync, dev)) or "spin")
    gpu = SimpleNamespace(gpu=True, cupy=True, device_index=1)
    cpu = SimpleNamespace(gpu=False, cupy=False, device_index=0)
    quiet = SimpleNamespace(streams=[])
    assert speed._lead(_spec(), gpu, quiet) == "spin"
    assert made == [("cupy", 1)]
    assert speed._lead(_spec(), cpu, quiet) is None  # perf_counter timing: nothing to queue
    assert speed._lead(_spec(lead=False), gpu, quiet) is None  # the spec opted out
    streamy = SimpleNamespace(streams=[("cupy", object(), True)])
    assert speed._lead(_spec(), gpu, streamy) is None  # its work would not wait for a spin
    assert speed._lead(_spec(), gpu, None) == "spin"  # no watch (the library's own timing)


class _RecordingTimer:
    def __init__(self) -> None:
        self.leads: list[object] = []

    def measure(self, fn, *, sync, before, after, lead=None):
        self.leads.append(lead)
        fn()
        return SimpleNamespace(median_s=1.0)


def test_a_stream_made_during_led_rounds_has_them_taken_again_without_the_lead(
    fake_events, monkeypatch
):
    log = fake_events
    monkeypatch.setattr(speed, "_lead", lambda spec, actx, watch: lambda: log.append("lead"))
    watch = SimpleNamespace(streams=[], aside=nullcontext)
    calls = SimpleNamespace(
        call=lambda: watch.streams.append(("torch", object(), True)) or log.append("call"),
        before=lambda rotate: rotate,
        after=lambda: None,
    )
    spec = SimpleNamespace(sync="cupy", library=None, lead=True)
    actx = SimpleNamespace(gpu=False, cupy=False, device_index=0)
    taken = speed._take_rounds(
        spec, None, ([0], [], []), calls, lambda: None, speed.QUICK, actx, SimpleNamespace(), watch
    )
    assert taken.lead is None and taken.rounds.done == speed.QUICK.min_rounds
    # the first rounds ran behind the lead; the kept ones, taken after, without it
    assert log.count("lead") == speed.QUICK.min_rounds
    assert log[-3:] == ["start", "call", "end"]
    # with no stream made, one set of rounds, and the lead kept
    log.clear()
    watch.streams = []
    calls.call = lambda: log.append("call")
    taken = speed._take_rounds(
        spec, None, ([0], [], []), calls, lambda: None, speed.QUICK, actx, SimpleNamespace(), watch
    )
    assert taken.lead is not None and log.count("lead") == speed.QUICK.min_rounds


def test_report_says_when_the_launch_was_hidden():
    block = {
        "metric": "GB/s",
        "note": "n",
        "learner": {"runs": 15, "value": 2.0e3},
        "ceiling": {"name": "copy", "value": 3.0e3, "device": "d"},
        "fraction": 0.66,
        "device_state": {},
    }
    assert not any("spin" in line for line in report.timing_lines(block))
    block["lead_us"] = 200.0
    assert any("200 us spin" in line for line in report.timing_lines(block))


def test_watch_patches_torch_streams_under_both_names_and_restores_them():
    torch = pytest.importorskip("torch")
    names = ("Stream", "ExternalStream")
    before = {n: (getattr(torch.cuda, n), getattr(torch.cuda.streams, n)) for n in names}
    w = Watch()
    w.install()
    try:
        for n in names:
            patched = getattr(torch.cuda, n)
            assert patched is not before[n][0] and issubclass(patched, before[n][0])
            assert getattr(torch.cuda.streams, n) is patched  # the other name a learner may use
    finally:
        w.uninstall()
    for n in names:
        assert (getattr(torch.cuda, n), getattr(torch.cuda.streams, n)) == before[n]


class _Queue:
    """Stands in for the spin kernel: records the cycles each lead queues."""

    def __init__(self) -> None:
        self.cycles: list[int] = []

    def __call__(self, cycles: int) -> None:
        self.cycles.append(cycles)


def test_a_spin_covers_a_measured_host_time_within_its_bounds():
    from gpulab.core.lead import ASSUMED_MHZ, COVER, LEAD_MAX_US, LEAD_US, Spin

    q = _Queue()
    s = Spin(q)
    s()
    assert q.cycles == [int(LEAD_US * ASSUMED_MHZ)]
    s.cover(50e-6)  # a quick launch: the spin it asked for stays
    assert s.us == LEAD_US
    s.cover(400e-6)  # a Triton launch under the watch on an H200
    assert s.us == pytest.approx(COVER * 400.0)
    s.cover(100e-6)  # it never shrinks within a check: the longest launch seen is covered
    assert s.us == pytest.approx(COVER * 400.0)
    s()
    assert q.cycles[-1] == int(COVER * 400.0 * ASSUMED_MHZ)
    s.cover(1.0)  # a second of host work is the call's own cost, not a launch to hide
    assert s.us == LEAD_MAX_US


def test_a_tied_spin_keeps_the_checked_calls_as_long_as_the_timed_ones():
    from gpulab.core.lead import COVER, Spin

    untimed, timed = Spin(_Queue()), Spin(_Queue())
    untimed.cover(300e-6)  # measured on our yardstick before the learner's first call
    timed.tie(untimed)
    assert timed.us == untimed.us == pytest.approx(COVER * 300.0)
    timed.cover(500e-6)  # a longer launch during the rounds: the checked calls follow
    assert untimed.us == timed.us == pytest.approx(COVER * 500.0)


def test_speed_ties_the_timed_spin_to_the_watchs(monkeypatch):
    from gpulab.core.lead import Spin

    monkeypatch.setattr(speed, "lead_spin", lambda sync, dev: Spin(_Queue()))
    untimed = Spin(_Queue())
    untimed.cover(1e-3)
    gpu = SimpleNamespace(gpu=True, cupy=True, device_index=0)
    made = speed._lead(_spec(), gpu, SimpleNamespace(streams=[], lead=untimed))
    assert made is not None and made.us == untimed.us == 1500.0


class _FakeTime:
    """A host clock that moves only when a stand-in call says it took time: the host times
    these tests read hold on a loaded machine."""

    t = 0.0

    @classmethod
    def now(cls) -> float:
        return cls.t

    @classmethod
    def call(cls, seconds: float):
        def run(*args):
            cls.t += seconds

        return run


class _HostClock:
    """The CUDA-event clock's stand-in with its host time: what each call took on the host."""

    def __init__(self, kind: str) -> None:
        self.host_s = 0.0

    def time(self, fn, inner, lead=None):
        if lead is not None:
            lead()
        t0 = _FakeTime.now()
        fn()
        self.host_s = _FakeTime.now() - t0
        return 1e-4


def test_rounds_cover_the_yardsticks_host_time_and_never_the_learners(monkeypatch):
    from gpulab.core import rounds
    from gpulab.core.lead import COVER, LEAD_US, Spin
    from gpulab.core.rounds import Contender, Rounds

    monkeypatch.setattr(timing, "EventClock", _HostClock)
    monkeypatch.setattr(timing, "sync_for", lambda kind: lambda: None)
    monkeypatch.setattr(rounds, "_now", _FakeTime.now)
    lead = Spin(_Queue())
    covered: list[float] = []
    real = lead.cover
    monkeypatch.setattr(lead, "cover", lambda host_s: covered.append(host_s) or real(host_s))
    you = Contender("you", _FakeTime.call(0.002))  # a learner's 2 ms of host work: theirs to pay
    ours = Contender("yardstick", _FakeTime.call(0.0004))
    r = Rounds([you, ours], sync="cupy", lead=lead, lead_from=("yardstick",))
    r.warm(1)  # even a quick check's single warm-up measures the yardstick once more
    assert covered == [pytest.approx(0.0004)]
    r.extend(3)
    assert covered == [pytest.approx(0.0004)] * 4  # every timed call of it too, none of yours
    assert lead.us == pytest.approx(COVER * 400.0)
    # with no contender named, the spin stays as asked
    plain = Spin(_Queue())
    Rounds([you, ours], sync="cupy", lead=plain).extend(2)
    assert plain.us == LEAD_US


def test_the_yardsticks_host_time_sets_the_spin_before_the_learners_first_call(monkeypatch):
    from gpulab.core.lead import COVER, Spin
    from gpulab.exercises import run_check

    monkeypatch.setattr(run_check, "_now", _FakeTime.now)
    calls: list[int] = []

    def yard(x):
        calls.append(x)
        _FakeTime.call(0.02 if len(calls) == 1 else 0.0004)()  # a cold first call: a compile

    check = SimpleNamespace(run=lambda fn, case, actx: fn(case.x))
    watch = SimpleNamespace(ours=lambda fn: fn, lead=Spin(_Queue()))
    run_check._cover(check, watch, yard, SimpleNamespace(x=3), SimpleNamespace())
    assert calls == [3, 3]
    assert watch.lead.us == pytest.approx(COVER * 400.0)  # the warm call's, not the cold one's


def test_the_spin_is_grown_before_a_check_in_process_and_never_where_ranks_run(monkeypatch):
    """On a CPU no spin is queued; here one stands in for the GPU's, so the step that grows it
    runs as on a device. A ranked exercise's ranks load the function again from its module's
    file: calling our yardstick through a wrapper there failed both collective references on
    2x H200 ("module ... has no attribute 'ring_all_reduce'")."""
    from gpulab.core.lead import Spin
    from gpulab.exercises import run_check
    from gpulab.exercises.job import check_inline
    from gpulab.exercises.loader import find

    covered: list[str] = []
    real = run_check._cover

    def spy(check, watch, yard_fn, case, actx):
        covered.append(yard_fn.__name__)
        real(check, watch, yard_fn, case, actx)

    monkeypatch.setattr(run_check, "_untimed_lead", lambda actx: Spin(_Queue()))
    monkeypatch.setattr(run_check, "_cover", spy)
    for ex_id, ranked in (("vector-add", False), ("ring-allreduce", True)):
        ex = find(ex_id)
        assert ex.ranked is ranked
        result, _ = check_inline(ex.id, str(ex.solution_path), 11, quick=True)
        assert result.passed, (ex_id, result.message)
        assert covered == ([ex.entry] if not ranked else []), covered
        covered.clear()


# ---------------------------------------------------------------------------------- on a GPU


def _need_cupy() -> None:
    from conftest import cupy_available

    if not cupy_available():
        pytest.skip("needs CuPy")


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_lead_hides_a_slow_host_launch_and_nothing_more():
    """A call whose host side takes 100 us before it launches a ~40 us kernel: timed alone the
    events see both; with the lead they see the kernel."""
    _need_cupy()
    import cupy

    from gpulab.core.lead import spin

    k = cupy.RawKernel(
        r"""extern "C" __global__ void k(long long cycles) {
            long long t0 = clock64(); while (clock64() - t0 < cycles) {} }""",
        "k",
    )
    cycles = cupy.int64(80_000)  # ~40 us at 2 GHz

    def slow_host_call():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 100e-6:
            pass
        k((1,), (1,), (cycles,))

    timer = Timer(warmup=2, repeats=15, budget_s=2)
    plain = timer.measure(slow_host_call, sync="cupy")
    led = timer.measure(slow_host_call, sync="cupy", lead=spin("cupy"))
    bare = timer.measure(lambda: k((1,), (1,), (cycles,)), sync="cupy", lead=spin("cupy"))
    assert plain.median_s > 120e-6, plain  # the host's 100 us are inside a lone call's events
    assert led.median_s < 0.6 * plain.median_s, (led, plain)
    assert abs(led.median_s - bare.median_s) < 10e-6, (led, bare)  # the kernel's own time


_STREAM_SOLUTION = '''
"""add_ten on a non-blocking stream made through cupy.cuda.stream (joined before returning)."""
import cupy as cp
import numpy as np

_k = cp.RawKernel(r"""
extern "C" __global__ void add_ten(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + 10.0f;
}
""", "add_ten")
_side = None


def add_ten(a, out):
    global _side
    if _side is None:
        _side = cp.cuda.stream.Stream(non_blocking=True)
    here = cp.cuda.get_current_stream()
    _side.wait_event(here.record())
    n = a.size
    _k(((n + 255) // 256,), (256,), (a, out, np.int32(n)), stream=_side)
    here.wait_event(_side.record())
'''


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_a_check_is_led_unless_the_learner_made_a_stream(tmp_path):
    _need_cupy()
    from gpulab.exercises.job import check_inline
    from gpulab.exercises.loader import find

    ex = find("map-add-ten")
    plain, _ = check_inline(ex.id, str(ex.solution_path), 7)
    assert plain.passed, plain.message
    # at least the spin asked for, grown to cover our yardstick's host time (core.lead)
    assert plain.timing["lead_us"] >= 200.0
    path = tmp_path / "solution.py"
    path.write_text(textwrap.dedent(_STREAM_SOLUTION))
    streamy, _ = check_inline(ex.id, str(path), 7)
    assert streamy.passed, streamy.message  # right code on its own stream still passes
    assert streamy.timing["lead_us"] == 0.0  # but is timed without a spin ahead of it
    assert "cupy" in sys.modules
