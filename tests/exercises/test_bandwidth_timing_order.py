"""bandwidth's rule that a pinned copy is not timed with the pinning of its buffer, read from the
order of what ran (clock readings, pinning, copies), on the CPU: the trace is recorded by the
check's own watch, however the learner imported its clock."""

from __future__ import annotations

import contextlib
import datetime
import time
from time import perf_counter as imported_early

import pytest

from gpulab.exercises.loader import find

torch = pytest.importorskip("torch")


def _check():
    from gpulab.testing.checks import open_check  # why not importlib: its module doc

    return open_check(find("bandwidth"))


CHECK = _check()


@pytest.mark.parametrize(
    "story, trace, counted",
    [
        # times-pinning: t0, pin, copy, t1 every round
        ("pinned inside the timer", ["clock", "pin", 0, "clock", "clock", "pin", 1, "clock"], 2),
        # pinned once before the first reading, then only copies timed
        ("pinned before timing", ["pin", "clock", 0, "clock", "clock", 1, "clock"], 0),
        # a third reading between the pinning and the copy: the pinning is its own stretch
        ("pin read apart", ["clock", "pin", "clock", 0, "clock"], 0),
        # pinning a buffer after the last reading: nothing timed it
        ("pinned after timing", ["clock", 0, "clock", "pin", 1], 0),
        # a pageable copy (index 2 is not pinned) beside a pinning is not a pinned figure
        ("pageable beside a pinning", ["clock", "pin", 2, "clock"], 0),
    ],
)
def test_a_pinned_copy_timed_with_its_pinning_is_counted(story, trace, counted):
    events = [("copy", e) if isinstance(e, int) else (e,) for e in trace]
    assert CHECK.timed_with_pinning(events, pinned={0, 1}) == counted, story


def test_the_watch_sees_every_clock_however_imported_and_each_pinning():
    import time as t

    with CHECK._watching_copies() as copies:
        t.perf_counter()
        imported_early()  # bound when this file was imported, before any watch
        time.monotonic_ns()
        datetime.datetime.now()
        torch.zeros(4).sum()  # neither a clock nor a pinning
    kinds = [e[0] for e in copies.trace]
    assert kinds == ["clock"] * 4, copies.trace
    assert copies.pinned_in_timing == 0


def test_a_pinning_request_is_seen_before_it_runs():
    """A pinned factory is recorded before it runs (on a machine without a GPU it raises: the
    order is what counts)."""
    with CHECK._watching_copies() as copies:
        time.perf_counter()
        with contextlib.suppress(RuntimeError):
            torch.empty(8, pin_memory=True)
        time.perf_counter()
    assert [e[0] for e in copies.trace] == ["clock", "pin", "clock"]


@pytest.mark.parametrize(
    "story, trace, timed",
    [
        # the reference: t0, copy, t1 for each kind (0 pageable, 1 pinned)
        ("each copy timed", ["clock", 0, "clock", "clock", 1, "clock"], [0, 1]),
        # a loop of copies between one pair of readings (right/to-device-loop-mean)
        ("a timed loop", ["clock", 0, 0, 0, "clock"], [0, 0, 0]),
        # the red team's: the copies the check counts, and no clock at all
        ("no clock", [0, 0, 1, 1], []),
        # readings that time nothing: before the copies, or only one of them
        ("clocks before", ["clock", "clock", 0, 1], []),
        ("one reading", [0, "clock", 1], []),
        # CUDA events: record, copy, record (a reading each), then elapsed_time
        ("events", ["clock", 1, "clock"], [1]),
        # a copy that is not host to GPU (index 9: not in h2d) is no figure
        ("host to host", ["clock", 9, "clock"], []),
    ],
)
def test_only_copies_between_two_clock_readings_are_timed(story, trace, timed):
    h2d = {0: (False, 64), 1: (True, 64)}
    events = [("copy", e) if isinstance(e, int) else (e,) for e in trace]
    assert CHECK.timed_copies(events, h2d) == [h2d[i] for i in timed], story
