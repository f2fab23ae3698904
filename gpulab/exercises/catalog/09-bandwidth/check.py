"""Check for bandwidth: the learner measures host-to-device copies, pageable and pinned, in GB/s.

The check calls `measure_h2d` in ROUNDS rounds, interleaved with its own measurement of the same
copies at the same size (yours, ours, yours, ours, ...), and judges the median of the per-round
ratios, so a load that comes and goes moves both figures alike. It also reads this device's
calibrated pinned host-to-device figure (the "h2d" ceiling) before the learner's code is
loaded: a figure above it means the clock stopped before the copy did, or the unit is wrong.

A TorchFunctionMode watches the learner's call: it must really copy `nbytes` bytes from pageable
and from pinned host memory to the GPU, at least twice each (a warm-up and a timed copy), so a
function that returns figures without copying (constants written down from an earlier run)
fails by name. The sizes are drawn from the seed.

It also keeps the order of what ran: the readings of a clock (time's functions, however they were
imported, and CUDA events recorded), the pinning of host memory (pin_memory(), a pinned factory)
and the copies. A pinned copy timed together with the pinning of its buffer, between the same
two readings, measures a host-to-host copy plus the link: on an H200 host whose host copies are
fast that figure came within the accepted band of a pinned copy, so the order is the rule.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

from gpulab.exercises import api

ENTRY = "measure_h2d"
MIB = 1 << 20
ROUNDS = 3
# Accepted: check's figure x [low, high], and never above the ceiling x CEILING_SLACK.
# A pinned buffer the learner allocates in their call copied at 17-24 GB/s on an H100, in a
# process where the check's own pinned buffer copied at 53 the same second (and where the same
# code on a buffer made beforehand reached 53): a property of the buffer, not of the timing.
# The mistakes this catches are far outside (milliseconds for seconds 1000x, a total of the
# runs 7x, a timer stopped before the copy ended: above the link itself).
PINNED_BOUNDS = (0.25, 1.6)
# A pageable copy goes through the driver's staging of host pages, so its rate follows the
# host memory (NUMA node, huge pages, first touch) more than the code: on one H200 host every
# way of copying measured 5.4-5.6 GB/s (bench/results/pageable-probe-h200.json), on another a
# learner's fresh buffer copied at 3.98 GB/s beside the check's kept one at 11.92. So the check
# measures pageable two ways itself, into a kept buffer and into a new tensor, and accepts the
# learner's figure from PAGEABLE_BOUNDS[0] of the slower to PAGEABLE_BOUNDS[1] of the faster;
# the mistakes it is there for are 7x and more out.
PAGEABLE_BOUNDS = (0.25, 2.5)
ORDER_MARGIN = 1.2  # pinned this much faster than pageable in the check's rounds: the order holds
CEILING_SLACK = 1.10
SIZES_MIB = ((48, 80), (192, 320))  # each case's size: whole MiB drawn in this range
MIN_COPIES = 2  # of nbytes, from each kind of host memory: a warm-up and a timed one
_now = time.perf_counter  # bound when the check loads, before the learner's file is imported
_BOUND: dict[str, Any] = {}


def cases(ctx: api.Context) -> list[api.Case]:
    ranges = ((12, 20),) if ctx.quick else SIZES_MIB
    sizes = [int(ctx.rng.integers(lo, hi + 1)) * MIB for lo, hi in ranges]
    return [api.Case(f"{n // MIB} MiB", {"nbytes": n}) for n in sizes]


def _copy_gbs(src: Any, dst: Any, repeats: int = 7) -> float:
    """Median GB/s of host-to-device copies of src into dst (the first call is a warm-up)."""
    sync = _BOUND["sync"]
    times = []
    for i in range(repeats + 1):
        sync(dst.device)
        t0 = _now()
        dst.copy_(src, non_blocking=True)
        sync(dst.device)  # the copy is done, not merely queued
        if i:
            times.append(_now() - t0)
    return src.numel() * src.element_size() / statistics.median(times) / 1e9


def _to_gbs(src: Any, repeats: int = 7) -> float:
    """Median GB/s of `src.to(device)` into a new tensor each time (the other correct way)."""
    sync = _BOUND["sync"]
    times = []
    for i in range(repeats + 1):
        sync()
        t0 = _now()
        src.to("cuda", non_blocking=True)
        sync()
        if i:
            times.append(_now() - t0)
    return src.numel() * src.element_size() / statistics.median(times) / 1e9


def _ceiling(ctx: api.Context) -> float | None:
    """This device's calibrated pinned host-to-device GB/s (measured once, then cached)."""
    try:
        from gpulab.core import peaks as pk
        from gpulab.core.devices import detect
        from gpulab.experiments.base import Context

        ectx = Context(inventory=detect(), device_index=ctx.device_index, quick=ctx.quick)
        found = pk.peak_for(pk.load_or_measure(ectx, quick=ctx.quick), "h2d")
        return float(found) if found is not None else None
    except Exception:  # noqa: BLE001 - no calibration: the check's own pinned figure stands in
        return None


def expected(case: api.Case, ctx: api.Context) -> dict[str, float | None]:
    """The calibrated ceiling, read before the learner's code is loaded; the check's own copies
    are measured in run(), interleaved with the learner's."""
    import torch

    _BOUND.setdefault("sync", torch.cuda.synchronize)
    return {"ceiling": _ceiling(ctx)}


_COPIES = ("torch.Tensor.copy_", "torch.Tensor.to", "torch.Tensor.cuda")


# Clocks by name: a C function's object is the same however it was imported, but datetime's
# now() is a new bound method at every call
_CLOCKS = {
    "time": {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns"},
    "datetime": {"now", "utcnow", "today"},
}


def _is_clock(fn: Any) -> bool:
    owner = getattr(fn, "__self__", None)
    module = owner.__name__ if hasattr(owner, "__name__") else ""
    if module in ("date", "datetime"):
        module = "datetime"
    return getattr(fn, "__name__", "") in _CLOCKS.get(module, ())


@contextlib.contextmanager
def _watching_copies() -> Iterator[list[tuple[bool, int]]]:
    """(from pinned memory, bytes) of every host-to-GPU copy made inside the block, in order; the
    list's `pinned_in_timing` (set on leaving) is how many pinned copies were timed with the
    pinning of host memory between the same two clock readings."""
    import torch
    from torch.overrides import TorchFunctionMode

    from gpulab.exercises.refuse import resolve

    watched = {resolve(n): n for n in _COPIES}
    pin = resolve("torch.Tensor.pin_memory")
    seen: list[tuple[Any, Any]] = []
    # in order: ("copy", index into seen), ("pin",), ("clock",)
    trace: list[tuple[Any, ...]] = []
    copies = _Copies([])
    record = getattr(getattr(torch.cuda, "Event", None), "record", None)
    record_code = getattr(record, "__code__", None)

    class _Watch(TorchFunctionMode):
        # Only the tensors are kept here, nothing asked of them: a learner timing each copy with
        # CUDA events sees whatever this costs between its events (is_pinned() asks the driver)
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            if func is pin or (kwargs or {}).get("pin_memory") is True:
                trace.append(("pin",))
            out = func(*args, **(kwargs or {}))
            try:
                name = watched.get(func)
            except TypeError:
                name = None
            if name and args:
                trace.append(("copy", len(seen)))
                if name == "torch.Tensor.copy_":
                    src = args[1] if len(args) > 1 else (kwargs or {}).get("src")
                    seen.append((src, args[0]))
                else:
                    seen.append((args[0], out))
            return out

    before = sys.getprofile()

    def clocks(frame: Any, event: str, arg: Any) -> None:
        if (event == "c_call" and _is_clock(arg)) or (
            event == "call" and record_code is not None and frame.f_code is record_code
        ):
            trace.append(("clock",))
        if before is not None:
            before(frame, event, arg)

    try:
        sys.setprofile(clocks)
        with _Watch():
            yield copies
    finally:
        sys.setprofile(before)
        pinned_h2d: set[int] = set()
        h2d: dict[int, tuple[bool, int]] = {}
        for i, (src, dst) in enumerate(seen):
            if (
                isinstance(src, torch.Tensor)
                and isinstance(dst, torch.Tensor)
                and src.device.type == "cpu"
                and dst.device.type == "cuda"
            ):
                copies.append((bool(src.is_pinned()), src.numel() * src.element_size()))
                h2d[i] = copies[-1]
                if copies[-1][0]:
                    pinned_h2d.add(i)
        copies.trace = trace
        copies.pinned_in_timing = timed_with_pinning(trace, pinned_h2d)
        copies.timed = timed_copies(trace, h2d)


class _Copies(list):
    """The copies one call made, and what ran in order (see _watching_copies)."""

    pinned_in_timing = 0
    trace: list[tuple[Any, ...]] = []
    timed: list[tuple[bool, int]] = []  # (pinned, bytes) of the copies between two clock readings


def timed_with_pinning(trace: list[tuple[Any, ...]], pinned: set[int]) -> int:
    """How many pinned copies to the GPU share the stretch between two clock readings with a
    pinning of host memory (plain data: a CPU test calls this). Readings before the first clock
    or after the last are no stretch: nothing there was timed."""
    count = 0
    stretch: list[tuple[Any, ...]] = []
    for event in trace:
        if event[0] == "clock":
            if any(e[0] == "pin" for e in stretch):
                count += sum(1 for e in stretch if e[0] == "copy" and e[1] in pinned)
            stretch = []
        else:
            stretch.append(event)
    return count


def timed_copies(
    trace: list[tuple[Any, ...]], h2d: dict[int, tuple[bool, int]]
) -> list[tuple[bool, int]]:
    """(pinned, bytes) of each host-to-GPU copy (`h2d`: its index in the trace's copies) that ran
    between two clock readings (plain data: a CPU test calls this). A copy before the first
    reading or after the last was timed by nothing."""
    out: list[tuple[bool, int]] = []
    stretch: list[tuple[bool, int]] = []
    started = False
    for event in trace:
        if event[0] == "clock":
            if started:
                out += stretch
            started, stretch = True, []
        elif event[0] == "copy" and event[1] in h2d:
            stretch.append(h2d[event[1]])
    return out


def _figures(got: Any) -> dict[str, float]:
    if not isinstance(got, dict) or not {"pageable", "pinned"} <= set(got):
        raise api.CheckError(
            "measure_h2d must return a dict with 'pageable' and 'pinned' figures in GB/s"
        )
    out = {}
    for key in ("pageable", "pinned"):
        value = got[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise api.CheckError(f"{key} = {value!r}: expected a positive number of GB/s")
        out[key] = float(value)
    return out


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    import torch

    n = case.args["nbytes"]
    dst = torch.empty(n, dtype=torch.uint8, device=torch.device(ctx.device))
    pageable = torch.full((n,), 3, dtype=torch.uint8)  # written, so its pages exist
    pinned = pageable.pin_memory()
    rounds = []
    for _ in range(ROUNDS):
        with _watching_copies() as copies:
            yours = _figures(fn(n))
        if copies.pinned_in_timing:
            raise api.CheckError(
                f"pinned = {yours['pinned']:.2f} GB/s times making the pinned buffer too: "
                f"{copies.pinned_in_timing} pinned copies to the GPU ran between the same two "
                "readings of your timer as a pin_memory() (a host-to-host copy into page-locked "
                "memory); pin the buffer once, before the timed copies"
            )
        for kind, is_pinned in (("pageable", False), ("pinned", True)):
            made = sum(1 for p, b in copies if p == is_pinned and b == n)
            if made < MIN_COPIES:
                raise api.CheckError(
                    f"measure_h2d made {made} copies of {n:,} bytes from {kind} host memory "
                    f"to the GPU, expected at least {MIN_COPIES} (a warm-up, then timed ones): "
                    "measure the copies, do not write the figures down"
                )
            # The copies counted above must also be what a clock timed: a red team made its
            # copies, read no clock, and returned a fraction of a calibrated figure
            if not any(p == is_pinned and b == n for p, b in copies.timed):
                raise api.CheckError(
                    f"none of measure_h2d's copies from {kind} host memory ran between two "
                    "readings of a clock (time.perf_counter(), CUDA events' record()): "
                    "measure the copies, do not write the figures down"
                )
        ours = {"pageable": _copy_gbs(pageable, dst), "pinned": _copy_gbs(pinned, dst)}
        fresh = _to_gbs(pageable)
        ours["pageable_low"] = min(ours["pageable"], fresh)
        ours["pageable_high"] = max(ours["pageable"], fresh)
        rounds.append({"yours": yours, "ours": ours})
    return {"rounds": rounds}


def compare(want: dict, got: dict, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    rounds = got["rounds"]
    ours_pinned = max(r["ours"]["pinned"] for r in rounds)
    ceiling = max(want["ceiling"], ours_pinned) if want["ceiling"] else ours_pinned
    for key in ("pinned", "pageable"):
        g = statistics.median(r["yours"][key] for r in rounds)
        if g > ceiling * CEILING_SLACK:
            return api.Mismatch(
                f"{key} = {g:.1f} GB/s is faster than this machine's link "
                f"({ceiling:.1f} GB/s calibrated): did the timer stop before the copy "
                "finished (synchronize), or is the unit not GB/s?",
                expected=ceiling,
                got=g,
            )
    # The order of the two: a pinned copy skips the driver's staging through its own pinned
    # buffer, so where the check measured pinned clearly faster, so must the learner
    y_pin, y_page = (
        statistics.median(r["yours"][k] for r in rounds) for k in ("pinned", "pageable")
    )
    o_pin, o_page = (
        statistics.median(r["ours"][k] for r in rounds) for k in ("pinned", "pageable")
    )
    if o_pin > ORDER_MARGIN * o_page and y_pin < y_page:
        return api.Mismatch(
            f"pinned = {y_pin:.1f} GB/s is below your pageable = {y_page:.1f} GB/s, but the check "
            f"measured pinned copies {o_pin / o_page:.1f}x faster than pageable ones: are the "
            "two figures swapped?",
            expected=o_pin,
            got=y_pin,
        )
    for key, (low, high) in (("pinned", PINNED_BOUNDS), ("pageable", PAGEABLE_BOUNDS)):
        g = statistics.median(r["yours"][key] for r in rounds)
        lo_key, hi_key = (f"{key}_low", f"{key}_high") if key == "pageable" else (key, key)
        w_lo = statistics.median(r["ours"][lo_key] for r in rounds)
        w_hi = statistics.median(r["ours"][hi_key] for r in rounds)
        if not low * w_lo <= g <= high * w_hi:
            measured = f"{w_lo:.2f} GB/s" if w_lo == w_hi else f"{w_lo:.2f} to {w_hi:.2f} GB/s"
            return api.Mismatch(
                f"{key} = {g:.2f} GB/s, but the check measured {measured} for the same copy "
                f"in the same {len(rounds)} rounds (accepted {low}x the slower to {high}x the "
                "faster)",
                expected=w_lo,
                got=g,
                max_error=min(abs(g - w_lo), abs(g - w_hi)),
            )
    return None
