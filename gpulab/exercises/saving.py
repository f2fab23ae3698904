"""Ratio rules measured here: what the learner's code saves over a baseline, against what our own
solution saves over the same baseline, timed in the same rounds on the same GPU.

A rule like "the compiled chain is 1.3x faster than eager" holds on the card it was tuned on and
fails elsewhere: the same saving is larger on a GPU whose memory is fast and whose host is slow,
smaller where launches are cheap. So such a rule asks for SHARE of our solution's saving, both
timed beside the baseline in interleaved rounds (the check's own loop). Where even ours saves
less than NO_EFFECT over the baseline, this GPU cannot show the effect: the rule is not applied,
the verdict says so, and only correctness is graded.

Plain arithmetic on the rounds' seconds: no torch, no CuPy.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gpulab.exercises.api import Mismatch

SHARE = 0.5  # of our solution's saving over the baseline the learner's must reach
NO_EFFECT = 1.15  # our solution's speedup below which this GPU cannot show the effect


@dataclass(frozen=True)
class Saving:
    """The medians of interleaved rounds: the baseline's, the learner's and ours (seconds)."""

    baseline_s: float
    yours_s: float
    ours_s: float
    rounds: int

    @classmethod
    def of(cls, rounds: Sequence[tuple[float, float, float]]) -> Saving:
        """From (baseline, yours, ours) seconds per round."""
        if not rounds:
            raise ValueError("no rounds")
        return cls(
            statistics.median(r[0] for r in rounds),
            statistics.median(r[1] for r in rounds),
            statistics.median(r[2] for r in rounds),
            len(rounds),
        )

    @property
    def ours_speedup(self) -> float:
        return self.baseline_s / self.ours_s if self.ours_s > 0 else 0.0

    @property
    def yours_speedup(self) -> float:
        return self.baseline_s / self.yours_s if self.yours_s > 0 else 0.0

    @property
    def share(self) -> float:
        """The learner's saving as a fraction of ours (1.0: as much; above 1: more)."""
        ours = self.baseline_s - self.ours_s
        return (self.baseline_s - self.yours_s) / ours if ours > 0 else 0.0

    def to_dict(self) -> dict[str, float]:
        """JSON-ready figures, for a check's message or a test."""
        return {
            "baseline_s": self.baseline_s,
            "yours_s": self.yours_s,
            "ours_s": self.ours_s,
            "rounds": self.rounds,
            "ours_speedup": self.ours_speedup,
            "yours_speedup": self.yours_speedup,
            "share": self.share,
        }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def judge(
    saving: Saving, *, what: str, baseline: str, hint: str = ""
) -> tuple[Mismatch | None, str]:
    """(why the learner's code fails the rule, or None; a note for the verdict, or ''). `what`:
    the learner's thing ("compiled call"); `baseline`: what both are compared with ("eager")."""
    rounds = f"{saving.rounds} round{'s' if saving.rounds != 1 else ''}"
    if saving.ours_speedup < NO_EFFECT:
        return None, (
            f"speed not graded: on this GPU our own solution's {what} ran "
            f"{saving.ours_speedup:.2f}x {baseline} (under {NO_EFFECT}x in {rounds}), "
            "too little for the rule to mean anything here"
        )
    if saving.share >= SHARE:
        return None, ""
    message = (
        f"your {what} takes {_ms(saving.yours_s)}, {baseline} {_ms(saving.baseline_s)} "
        f"({saving.yours_speedup:.2f}x); ours takes {_ms(saving.ours_s)} "
        f"({saving.ours_speedup:.2f}x) in the same {rounds} on this GPU: yours "
        f"saves {max(0.0, saving.share):.0%} of what ours saves, at least {SHARE:.0%} is asked"
    )
    if hint:
        message += f" ({hint})"
    return Mismatch(message, expected=SHARE, got=saving.share), ""
