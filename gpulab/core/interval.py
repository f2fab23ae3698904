"""An interval on a median from the samples alone: how sure a graded figure is.

A grade compares the learner's speed with a yardstick's, round by round (paired, interleaved
timings). The figure is the median of the per-round ratios; its interval is the distribution-free
one for a median (order statistics: the k-th smallest and the k-th largest sample, with k from
the binomial distribution), so it assumes nothing about the shape of timing noise, which has
long tails (a context switch, a clock step) that a normal-theory interval would let through.

Pure arithmetic: no NumPy, no torch, usable in the UI process and in tests.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LEVEL = 0.95  # the interval's coverage: a grade line inside it is too close to call yet


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(min(k, n) + 1)) / 2.0**n


def median_ranks(n: int, level: float = LEVEL) -> tuple[int, int, float]:
    """(lo, hi, coverage): 0-based ranks of the sorted samples that bound the median with at least
    `level` coverage where n allows it, and the coverage reached. For n below 6 no rank pair
    reaches 95%: the extremes are returned with their (lower) coverage."""
    if n <= 0:
        raise ValueError("no samples")
    best = 0  # i: the interval is [x_(i), x_(n-1-i)], 0-based
    for i in range((n - 1) // 2 + 1):
        # the median lies outside when i or fewer samples fall below it, or above it
        if 1.0 - 2.0 * _binom_cdf(i, n) >= level:
            best = i
        else:
            break
    return best, n - 1 - best, 1.0 - 2.0 * _binom_cdf(best, n)


@dataclass(frozen=True)
class Interval:
    """A median with its order-statistic interval."""

    median: float
    lo: float
    hi: float
    n: int
    coverage: float

    def contains(self, value: float) -> bool:
        """Whether `value` lies inside the interval (a grade line there is too close to call)."""
        return self.lo <= value <= self.hi

    def straddles(self, lines: Iterable[float]) -> list[float]:
        """The grade lines inside the interval, lowest first."""
        return sorted(v for v in lines if self.contains(v))

    def to_dict(self) -> dict[str, float | int]:
        """The interval as JSON-ready data."""
        return {
            "median": self.median,
            "lo": self.lo,
            "hi": self.hi,
            "n": self.n,
            "coverage": round(self.coverage, 4),
        }


def median_interval(samples: Sequence[float], level: float = LEVEL) -> Interval:
    """The median of `samples` and the interval that holds the true median with `level`
    coverage (or the widest the sample count allows, with its coverage)."""
    xs = sorted(float(x) for x in samples)
    lo, hi, coverage = median_ranks(len(xs), level)
    return Interval(statistics.median(xs), xs[lo], xs[hi], len(xs), coverage)
