"""The ring all-reduce's alpha-beta model, fitted to one run's own points.

A ring all-reduce on n ranks is a reduce-scatter then an all-gather, n - 1 steps each. Every
step pays a start-up cost alpha (launch, handshake, the first byte's trip) and moves S/n bytes
over each link at B bytes/s, so (S bytes, t seconds):

    t(S, n) = 2(n-1) * alpha + 2(n-1)/n * S / B

and the bus bandwidth nccl-tests report, busbw = S/t x 2(n-1)/n, tends to B for large S. Both
constants come from the run itself, never from another card: alpha from the smallest message
(where the S/B term is tiny) and B from the largest (where alpha is), solved together from the
two medians. What the model then draws at the sizes and rank counts in between is a prediction
the measurements can contradict: NCCL changes protocol with size (LL, LL128, Simple) and
algorithm (ring, tree, NVLS), which a two-constant model does not know.

Pure arithmetic: no torch, usable in tests and the UI process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpulab.core.results import Series
from gpulab.experiments.result_rows import size_label


def steps(n: int) -> int:
    """Ring steps of one all-reduce on n ranks: n - 1 to reduce-scatter, n - 1 to all-gather."""
    return 2 * (n - 1)


def link_share(n: int) -> float:
    """The bytes each link carries in a ring all-reduce per byte of the buffer: 2(n-1)/n."""
    return 2.0 * (n - 1) / n


@dataclass(frozen=True)
class RingModel:
    """alpha (seconds per ring step) and B (bytes/s per link), and what they were fitted from."""

    alpha_s: float
    bandwidth_bps: float
    fitted_from: str

    def time_s(self, nbytes: float, n: int) -> float:
        """The predicted all-reduce time of nbytes on n ranks."""
        return steps(n) * self.alpha_s + link_share(n) * nbytes / self.bandwidth_bps

    def busbw_gbs(self, nbytes: float, n: int) -> float:
        """The predicted bus bandwidth (GB/s) of an all-reduce of nbytes on n ranks."""
        return nbytes / self.time_s(nbytes, n) * link_share(n) / 1e9

    def to_dict(self) -> dict[str, float | str]:
        """The fit as JSON-ready data, in the units a reader wants (us, GB/s)."""
        return {
            "alpha_us": self.alpha_s * 1e6,
            "bandwidth_gbs": self.bandwidth_bps / 1e9,
            "fitted_from": self.fitted_from,
        }


def fit(points: Sequence[tuple[int, float]], n: int) -> RingModel | None:
    """The model through the smallest and the largest message of `points` ((bytes, median
    seconds) of all-reduces on n ranks); None when they cannot fix it (fewer than two sizes, one
    rank, or a largest message no slower than the smallest: no bandwidth term to see)."""
    if n < 2 or len({b for b, _ in points}) < 2:
        return None
    (s0, t0), (s1, t1) = min(points), max(points)
    per_byte = (t1 - t0) / (s1 - s0)  # link_share(n) / B
    if per_byte <= 0:
        return None
    start = max(0.0, t0 - per_byte * s0)  # steps(n) * alpha
    return RingModel(
        alpha_s=start / steps(n),
        bandwidth_bps=link_share(n) / per_byte,
        fitted_from=(
            f"alpha from the {size_label(s0)} all-reduce's median ({t0 * 1e6:.3g} us = "
            f"{steps(n)} ring steps on {n} ranks), B from the {size_label(s1)} one's "
            f"({t1 * 1e3:.3g} ms), the two solved together"
        ),
    )


def describe(model: RingModel, peer_gbs: float | None) -> str:
    """The fit in words: its constants and what each came from (and B against the peer copy)."""
    gbs = model.bandwidth_bps / 1e9
    text = f"alpha = {model.alpha_s * 1e6:.3g} us a step, B = {gbs:.3g} GB/s"
    if peer_gbs:
        text += f" ({gbs / peer_gbs:.2f} of this run's {peer_gbs:.3g} GB/s peer copy)"
    return f"{text}; {model.fitted_from}"


def size_series(model: RingModel, sizes: Sequence[float], n: int) -> Series:
    """The model's busbw at each message size on n ranks, to draw beside the measured one."""
    return _series(sizes, [model.busbw_gbs(s, n) for s in sizes], "message size (bytes)", True)


def ranks_series(model: RingModel, nbytes: float, counts: Sequence[int]) -> Series:
    """The model's busbw of an nbytes all-reduce at each rank count."""
    return _series(counts, [model.busbw_gbs(nbytes, n) for n in counts], "ranks", False)


def _series(xs: Sequence[float], ys: list[float], x_label: str, log: bool) -> Series:
    return Series(
        "all-reduce, ring model (alpha-beta)",
        [float(x) for x in xs],
        ys,
        x_label=x_label,
        y_label="busbw (GB/s)",
        log_x=log,
        log_y=log,
        model=True,
    )
