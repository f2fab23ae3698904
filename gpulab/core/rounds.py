"""Interleaved rounds: several contenders timed alike, one call each per round.

A grade compares the learner's code with a yardstick (the expert's or the reference's solution)
timed on the same GPU in the same check. Timed one after the other, each would see a different
moment of the machine: a clock step, another process, a host hiccup would fall on one side only.
In rounds, each round times one call of every contender back to back, in an order that rotates
from round to round (so no contender always follows the same one), and the per-round ratio of
two contenders cancels what the round's moment did to both. `extend` adds rounds to the same
record, for a figure whose interval is still too wide to grade.

GPU calls are timed with CUDA events (the same `EventClock` as `Timer`, with the same optional
lead spin ahead of each start event); CPU calls with perf_counter. `before` and `after` run
untimed around every call, as with `Timer.measure`. `mark` runs after every round, untimed (the
grader reads the GPU's clocks there).

`lead_from` names the contenders whose host time the lead must hide (core.lead's Spin.cover):
measured on their warm calls and again on every timed one, so the spin grows to cover the
longest launch they have shown on this host. The grader names the yardstick, never the learner:
a learner's host time beyond the yardstick's is theirs to pay.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpulab.core import timing as _timing
from gpulab.core.timing import Timing, is_wild

# Bound at import: code being timed that rebinds time.perf_counter must not change this clock
_now = time.perf_counter


@dataclass
class Contender:
    """One side of the rounds: a call, and what runs untimed before and after it."""

    name: str
    call: Callable[[], Any]
    before: Callable[[], Any] | None = None
    after: Callable[[], Any] | None = None


class Rounds:
    """The interleaved timing of `contenders` (see the module doc)."""

    def __init__(
        self,
        contenders: Sequence[Contender],
        *,
        sync: str = "none",
        lead: Callable[[], Any] | None = None,
        cancel_check: Callable[[], None] | None = None,
        mark: Callable[[], None] | None = None,
        lead_from: Sequence[str] = (),
    ) -> None:
        if sync not in _timing.SYNC_KINDS:
            raise ValueError(f"sync must be one of {_timing.SYNC_KINDS}, got {sync!r}")
        names = [c.name for c in contenders]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"contenders need distinct names: {names}")
        self.contenders = list(contenders)
        self.sync = sync
        self.lead = lead if sync != "none" else None
        cover = getattr(self.lead, "cover", None)
        self._cover: Callable[[float], Any] = cover or (lambda host_s: None)
        self.lead_from = frozenset(lead_from) if cover is not None else frozenset()
        self.cancel_check = cancel_check or (lambda: None)
        self.mark = mark or (lambda: None)
        self._device_sync = _timing.sync_for(sync)
        self._clock = _timing.EventClock(sync) if sync != "none" else None
        self.times: dict[str, list[float]] = {n: [] for n in names}
        self.cold: dict[str, float | None] = {n: None for n in names}
        self.done = 0  # rounds taken so far

    def _one(self, c: Contender) -> float:
        if c.before:
            c.before()
        if self._clock is not None:
            t = self._clock.time(c.call, 1, self.lead)
            if c.name in self.lead_from:
                self._cover(self._clock.host_s)
        else:
            t0 = _now()
            c.call()
            t = _now() - t0
        if c.after:
            c.after()
        return t

    def warm(self, warmup: int = 2) -> None:
        """Each contender's cold call (timed on the host, after a synchronize: it pays for
        compilation and first-touch, a lesson of its own, and never enters a median), then
        `warmup - 1` untimed calls."""
        for c in self.contenders:
            self._device_sync()
            if c.before:
                c.before()
                self._device_sync()
            t0 = _now()
            c.call()
            self._device_sync()
            self.cold[c.name] = _now() - t0
            if c.after:
                c.after()
            self.cancel_check()
            # a contender the lead covers makes one warm call at least: its host time, before
            # the first timed round
            for _ in range(max(0, warmup - 1, 1 if c.name in self.lead_from else 0)):
                if c.before:
                    c.before()
                t0 = _now()
                c.call()
                if c.name in self.lead_from:
                    self._cover(_now() - t0)
                self._device_sync()
                if c.after:
                    c.after()
                self.cancel_check()

    def extend(self, rounds: int) -> None:
        """Take `rounds` more rounds: every contender once each, the order rotating by one
        contender a round."""
        n = len(self.contenders)
        for _ in range(max(0, rounds)):
            k = self.done % n
            for c in self.contenders[k:] + self.contenders[:k]:
                self.times[c.name].append(self._one(c))
            self.done += 1
            self.mark()
            self.cancel_check()

    def reset(self) -> None:
        """Forget the rounds taken (a window to be timed again); the cold calls stay."""
        self.times = {n: [] for n in self.times}
        self.done = 0

    def ratios(self, num: str, den: str) -> list[float]:
        """Per round, `num`'s time over `den`'s: above 1 where `den` was faster that round."""
        return [a / b for a, b in zip(self.times[num], self.times[den], strict=True) if b > 0]

    def timing(self, name: str) -> Timing:
        """`name`'s rounds as a Timing (median, min, max over the rounds; its cold call)."""
        times = self.times[name]
        if not times:
            raise ValueError(f"no rounds of {name} taken")
        return Timing(
            median_s=statistics.median(times),
            min_s=min(times),
            max_s=max(times),
            runs=len(times),
            cold_s=self.cold[name],
            method="cuda-events" if self._clock is not None else "perf_counter",
            times_s=list(times),
            noisy=is_wild(times),
        )
