"""The one timer every experiment uses.

GPU work is asynchronous: a launch returns before the kernel runs. So torch and CuPy work is
timed with CUDA events recorded on the current stream, and CPU work with `perf_counter`. The first
call is timed on its own (`cold_s`): it pays for module loading, kernel compilation and library
handle creation, which is a lesson in itself and must never pollute the steady-state median.

A wild spread (the slowest timed run over NOISY_SPREAD times the fastest) means something else
took the machine for part of the measurement: the runs are taken once more and the calmer set
kept (`Timing.remeasured`); when that one is wild too the timing says so (`Timing.noisy`), and
its row carries a note instead of passing the median off as the answer.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SYNC_KINDS = ("none", "torch", "cupy")
NOISY_SPREAD = 3.0  # max / min of the timed runs above which a timing is re-taken, then flagged
NOISY_MIN_GAP_S = 10e-6  # below this gap between max and min it is clock jitter, not noise
# Bound at import: code being timed (a learner's exercise) that rebinds time.perf_counter must
# not change the clock that times it.
_now = time.perf_counter


def is_wild(times: list[float]) -> bool:
    """Whether a set of timed runs spreads too far to report its median as the answer."""
    if len(times) < 3:
        return False  # one or two long runs: no spread to judge
    lo, hi = min(times), max(times)
    return lo > 0 and hi / lo > NOISY_SPREAD and hi - lo > NOISY_MIN_GAP_S


@dataclass
class Timing:
    """One timed operation: median, min and max over the runs, the cold first call, and how it
    was taken."""

    median_s: float
    min_s: float
    max_s: float
    runs: int
    cold_s: float | None
    method: str
    times_s: list[float] = field(default_factory=list)
    remeasured: bool = False  # the first set of runs spread wildly and was taken again
    noisy: bool = False  # the runs kept still spread wildly: see NOISY_SPREAD

    @property
    def spread(self) -> float:
        """max / min of the timed runs (1.0 when there is nothing to compare)."""
        return self.max_s / self.min_s if self.min_s > 0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        """The timing as JSON-ready data."""
        return {
            "median_s": self.median_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "runs": self.runs,
            "cold_s": self.cold_s,
            "method": self.method,
            "remeasured": self.remeasured,
            "noisy": self.noisy,
        }


class EventClock:
    """Times one call with a pair of CUDA events; returns seconds."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.host_s = 0.0
        if kind == "torch":
            import torch

            self._new = lambda: torch.cuda.Event(enable_timing=True)
            self._sync = torch.cuda.synchronize
        else:
            import cupy

            self._new = cupy.cuda.Event
            self._sync = cupy.cuda.Device().synchronize

    def sync(self) -> None:
        self._sync()

    def time(
        self, fn: Callable[[], Any], inner: int, lead: Callable[[], Any] | None = None
    ) -> float:
        start, end = self._new(), self._new()
        if lead is not None:
            lead()  # device work queued ahead of the start event: see Timer.measure
        start.record()
        t0 = _now()
        for _ in range(inner):
            fn()
        self.host_s = (_now() - t0) / inner  # the host's side of the call
        end.record()
        end.synchronize()
        if self.kind == "torch":
            ms = start.elapsed_time(end)
        else:
            import cupy

            ms = cupy.cuda.get_elapsed_time(start, end)
        return ms / 1e3 / inner


def sync_for(kind: str) -> Callable[[], None]:
    if kind == "torch":
        import torch

        return torch.cuda.synchronize
    if kind == "cupy":
        import cupy

        return cupy.cuda.Device().synchronize
    return lambda: None


class Timer:
    """Warm-up, then repeat until `repeats` runs or `budget_s` seconds, at least `min_runs`."""

    def __init__(
        self,
        warmup: int = 2,
        repeats: int = 20,
        budget_s: float = 2.0,
        min_runs: int = 3,
        cancel_check: Callable[[], None] | None = None,
    ) -> None:
        self.warmup = warmup
        self.repeats = repeats
        self.budget_s = budget_s
        self.min_runs = min_runs
        self.cancel_check = cancel_check or (lambda: None)

    def measure(
        self,
        fn: Callable[[], Any],
        *,
        sync: str = "none",
        before: Callable[[], Any] | None = None,
        after: Callable[[], Any] | None = None,
        warmup: int | None = None,
        repeats: int | None = None,
        budget_s: float | None = None,
        min_runs: int | None = None,
        inner: int = 1,
        cold: bool = True,
        lead: Callable[[], Any] | None = None,
    ) -> Timing:
        """Time `fn`. `sync` is "torch" or "cupy" for device work (CUDA events), else "none".

        `before` runs untimed ahead of every call (fresh inputs, an L2 flush); `after` runs
        untimed once each call's device work has finished (cold, warm-up and timed calls alike:
        an exercise checks the output of every timed call there). `inner` calls `fn` that many
        times between one pair of events and divides, for work shorter than a launch.

        `lead` (events only) queues device work just ahead of each start event, such as a short
        spin kernel: the GPU is then still busy with it while the host launches `fn`'s work, so
        the events bracket the device's time for that work, not the host's launch latency too
        (what triton.testing.do_bench gets from the cache flush it queues before each call).
        """
        if sync not in SYNC_KINDS:
            raise ValueError(f"sync must be one of {SYNC_KINDS}, got {sync!r}")
        warmup = self.warmup if warmup is None else warmup
        repeats = self.repeats if repeats is None else repeats
        budget_s = self.budget_s if budget_s is None else budget_s
        min_runs = self.min_runs if min_runs is None else min_runs
        device_sync = sync_for(sync)
        clock = EventClock(sync) if sync != "none" else None

        cold_s = None
        if cold:
            # Synchronize first so earlier queued work is not billed to the cold call.
            device_sync()
            if before:
                before()
                device_sync()
            t0 = _now()
            fn()
            device_sync()
            cold_s = _now() - t0
            if after:
                after()
            self.cancel_check()
        for _ in range(max(0, warmup - (1 if cold else 0))):
            if before:
                before()
            fn()
            device_sync()
            if after:
                after()
            self.cancel_check()

        def sample() -> list[float]:
            times: list[float] = []
            t_start = _now()
            while len(times) < max(1, min_runs) or (
                len(times) < repeats and _now() - t_start < budget_s
            ):
                if before:
                    before()
                if clock is not None:
                    times.append(clock.time(fn, inner, lead))
                else:
                    t0 = _now()
                    for _ in range(inner):
                        fn()
                    times.append((_now() - t0) / inner)
                if after:
                    after()
                self.cancel_check()
            return times

        times = sample()
        remeasured = False
        if is_wild(times):
            again = sample()
            remeasured = True
            # The calmer set is the one less disturbed; ties go to the later (warmer) one.
            if max(again) / min(again) <= max(times) / min(times):
                times = again
        return Timing(
            median_s=statistics.median(times),
            min_s=min(times),
            max_s=max(times),
            runs=len(times),
            cold_s=cold_s,
            method="cuda-events" if clock is not None else "perf_counter",
            times_s=times,
            remeasured=remeasured,
            noisy=is_wild(times),
        )


SUSTAINED_MIN_CALL_S = 5e-4


def sustained_kw(
    fn: Any, sync: Any, seconds: float = 0.5, *, min_call_s: float = SUSTAINED_MIN_CALL_S
) -> dict[str, Any]:
    """Run `fn` back to back for about `seconds` (untimed) and return Timer.measure kwargs.

    A long compute-bound kernel runs faster in short bursts than under sustained load (clocks
    drop to the power limit within a fraction of a second: an 8192 bf16 matmul on an H200 ran
    at 794 TFLOP/s in single timed calls and 681 back to back). So ops of `min_call_s` (0.5 ms)
    or more are timed in the steady state, `inner` calls back to back per sample, like
    torch.utils.benchmark; shorter ops stay single calls (empty kwargs), where launch latency
    is the lesson. `min_call_s=0` forces the steady state: for rows compared with each other or
    with the calibration, which must all be timed the same way.
    """
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(4):
            fn()
        sync()  # keep the queue shallow: the host would otherwise run far ahead
        calls += 4
    per_call = (time.perf_counter() - t0) / calls
    if per_call < min_call_s:
        return {}
    return {"inner": max(1, min(50, round(0.03 / per_call))), "warmup": 0, "cold": False}
