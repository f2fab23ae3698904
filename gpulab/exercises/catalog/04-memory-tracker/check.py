"""Check for memory-tracker: a context manager that reports allocated delta, peak and reserved.

Each case runs the same workload inside the learner's tracker: keep an array of `keep` bytes and
create then free a temporary of `temp` bytes, so the block ends `keep` bytes up and peaks
`keep + temp` bytes above where it started. Before the block the check keeps a baseline array
alive (so absolute figures are wrong) and allocates and frees a larger spike (so a tracker that
does not reset the peak reports the spike).

On the CPU the workload allocates NumPy arrays, which tracemalloc sees; half the cases run with
tracemalloc already tracing (the tracker must reset its peak and leave it running) and half
without (the tracker must start it and stop it again). On a GPU the workload allocates torch
tensors on the device, and the reserved figure must show the caching allocator keeping the freed
temporary.
"""

from __future__ import annotations

import numbers
import sys
import tracemalloc
from typing import Any

from gpulab.exercises import api
from gpulab.exercises.sandbox import Guard, hooks, unhook

ENTRY = "MemoryTracker"
MIB = 1 << 20
FIELDS = ("allocated_delta", "peak_delta", "reserved_delta")
# The caching allocator's kSmallSize and the 512 B a request is rounded to: a large block's rest
# up to this stays whole
_UNSPLIT = MIB + 512


def cases(ctx: api.Context) -> list[api.Case]:
    _bind_allocators(ctx.device)
    import _tracemalloc  # noqa: F401 - loaded, so its namespace is in the snapshot

    _TRACED[:] = _tracemalloc_now()
    rng = ctx.rng
    # Sizes drawn whole from the seed, each in its own span (small and large keeps, temporaries
    # smaller and larger than the keep), and the CPU cases in a shuffled order: a fixed table
    # with a few KiB of jitter was answered by a tracker that measured nothing, counting the
    # trackers made and returning the n-th row (gold). Every keep + temp stays under the spike.
    spans = [(1, 4, 16, 40), (2, 6, 2, 6), (12, 16, 1, 6), (1, 2, 30, 40), (4, 8, 6, 12)]
    plans = [spans[int(j)] for j in rng.permutation(len(spans))]
    devices = ["cpu"] * len(plans)
    if ctx.device != "cpu":  # the CPU path is checked everywhere, the GPU path where there is one
        plans += [(48, 64, 128, 192), (4, 12, 24, 48), (24, 40, 24, 40)]
        devices += [ctx.device] * 3
    out = []
    for i, ((k_lo, k_hi, t_lo, t_hi), device) in enumerate(zip(plans, devices, strict=True)):
        keep_b = int(rng.integers(k_lo * MIB, k_hi * MIB))
        temp_b = int(rng.integers(t_lo * MIB, t_hi * MIB))
        tracing = device == "cpu" and i % 2 == 0  # was somebody else already tracing?
        raises = i in (4, 7)
        label = f"{device}: keep {keep_b:,} B, temporary {temp_b:,} B"
        if device == "cpu":
            label += ", tracemalloc already on" if tracing else ", tracemalloc off"
        label += ", the block raises" if raises else ""
        spike = (256 if device != "cpu" else 64) * MIB
        out.append(
            api.Case(
                label,
                {"keep": keep_b, "temp": temp_b, "device": device},
                {"tracing": tracing, "raises": raises, "spike": spike, "baseline": 2 * MIB},
            )
        )
    return out


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    keep, temp = case.args["keep"], case.args["temp"]
    gpu = case.args["device"] != "cpu"
    return {
        "allocated_delta": keep,
        "peak_delta": keep + temp,
        # The caching allocator keeps the freed temporary's block: reserved rises by at least
        # keep + temp (rounded up to its segment size). The CPU path has no such figure.
        "reserved_delta": keep + temp if gpu else None,
    }


def _reserved(device: str) -> int:
    """What PyTorch's caching allocator holds now, read by the check itself."""
    if device == "cpu":
        return 0
    import torch

    torch.cuda.synchronize(device)
    return int(torch.cuda.memory_reserved(device))


class _Boom(Exception):
    pass


# The workload's allocators, bound by `cases` before the learner's file is loaded: a tracker
# whose __enter__ rebinds numpy.full (or torch.full) would otherwise read the sizes the
# workload asks for instead of measuring memory, and its __exit__ could put them back unseen.
_FULL: dict[str, Any] = {}


def _bind_allocators(device: str) -> None:
    import numpy as np

    _FULL.setdefault("cpu", np.full)
    if device != "cpu":
        import torch

        _FULL.setdefault("gpu", torch.full)


def _alloc(device: str, nbytes: int) -> Any:
    import numpy as np

    if device == "cpu":
        return _FULL["cpu"](nbytes, 7, dtype=np.uint8)  # written, so the pages are real
    import torch

    return _FULL["gpu"]((nbytes,), 7, dtype=torch.uint8, device=device)


def _hooked(saved: tuple[Any, ...]) -> bool:
    """Whether a profile or trace hook (or a sys.monitoring tool) was set since `saved`; put
    back if so."""
    return bool(unhook(saved))


_HOOKED = (
    "your tracker installed a profiler/tracer (sys.setprofile, sys.settrace or threading's): "
    "it reads what the check calls, not memory; measure with tracemalloc (or torch.cuda's "
    "memory figures) alone"
)


# What the check asks tracemalloc after the block (is it tracing, was the baseline traced before
# it): a tracker that restarted tracing (so its absolute figures were the deltas) rebound
# tracemalloc.get_object_traceback in __exit__ to vouch for the baseline, and passed. Its
# namespaces, private names too (the Python functions look up _tracemalloc's on every call),
# are compared with what they held before the learner's file loaded (`cases` runs first).
_TRACEMALLOC = ("tracemalloc", "_tracemalloc")
_TRACED: list[tuple[str, Any, dict[str, Any]]] = []


def _tracemalloc_now() -> list[tuple[str, Any, dict[str, Any]]]:
    return [(n, m, dict(vars(m))) for n in _TRACEMALLOC if (m := sys.modules.get(n)) is not None]


def _tracemalloc_rebound(saved: list[tuple[str, Any, dict[str, Any]]]) -> list[str]:
    """The names of tracemalloc's modules changed since `saved`, put back."""
    names = []
    for mod_name, mod, before in saved:
        now = vars(mod)
        for key in set(now) | set(before):
            if key not in before:
                names.append(f"{mod_name}.{key}")
                delattr(mod, key)
            elif now.get(key, _MISSING) is not before[key]:
                names.append(f"{mod_name}.{key}")
                setattr(mod, key, before[key])
    return sorted(names)


_MISSING = object()


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    device = case.args["device"]
    keep, temp = case.args["keep"], case.args["temp"]
    we_trace = device == "cpu" and case.meta["tracing"]
    if device == "cpu" and tracemalloc.is_tracing():
        tracemalloc.stop()  # a clean start for every case
    if we_trace:
        tracemalloc.start()
    try:
        baseline = _alloc(device, case.meta["baseline"])
        spike = _alloc(device, case.meta["spike"])
        del spike
        if device != "cpu":
            import torch

            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()  # the block's reserved growth is then its own
        # A memory tracker needs no profiler or tracer: one installed anywhere from its
        # constructor to its __exit__ is watching the workload's calls (their sizes in the
        # frames), and is taken away again before the workload runs under it
        saved = hooks()
        # The functions the workload calls, looked at once __enter__ has run: a tracker that
        # rebinds one (numpy._core.numeric.empty, which np.full looks up on every call) counts
        # what the check allocates by name, not memory, and puts it back in __exit__
        guard = Guard()
        try:
            tracker = fn(device)
        except Exception as exc:  # noqa: BLE001 - any error of the learner's class is the verdict
            raise api.CheckError(f"MemoryTracker({device!r}) raised {exc!r}") from None
        if _hooked(saved):
            raise api.CheckError(_HOOKED)
        swallowed = True
        hooked, rebound = False, []
        reserved_before = _reserved(device)
        try:
            with tracker as t:
                hooked = _hooked(saved)
                rebound = guard.restore() + _tracemalloc_rebound(_TRACED)
                if not hooked and not rebound:
                    kept = _alloc(device, keep)
                    tmp = _alloc(device, temp)
                    del tmp
                    if case.meta["raises"]:
                        raise _Boom("raised inside the with block on purpose")
        except _Boom:
            swallowed = False
        rebound = rebound or _tracemalloc_rebound(_TRACED)
        if hooked or _hooked(saved):
            raise api.CheckError(_HOOKED)
        if rebound:
            raise api.CheckError(
                f"your tracker rebinds {rebound[0]}: it changes what the check calls or reads, "
                "not memory; measure with tracemalloc (or torch.cuda's memory figures)"
            )
        if case.meta["raises"] and swallowed:
            raise api.CheckError(
                "the tracker swallowed the exception raised inside the with block "
                "(__exit__ must return False or None)"
            )
        reserved_growth = None if device == "cpu" else _reserved(device) - reserved_before
        if t is None:
            t = tracker  # `with X() as t` binds what __enter__ returns; accept the tracker too
        if device == "cpu":
            if we_trace and not tracemalloc.is_tracing():
                raise api.CheckError("the tracker stopped tracemalloc that somebody else started")
            if we_trace and tracemalloc.get_object_traceback(baseline) is None:
                # traced before the block, so only a restart forgets it
                raise api.CheckError(
                    "the tracker restarted tracemalloc that somebody else started, throwing away "
                    "everything it had traced: leave it running and use tracemalloc.reset_peak()"
                )
            if not we_trace and tracemalloc.is_tracing():
                raise api.CheckError(
                    "the tracker left tracemalloc running (stop it if you started it: "
                    "tracing slows every allocation)"
                )
        got = {}
        for name in FIELDS:
            if not hasattr(t, name):
                raise api.CheckError(f"the tracker has no attribute {name!r} after the block")
            got[name] = value = getattr(t, name)
            if value is not None and not _plain_number(value):
                # compare() subtracts the expected figure from it: a float subclass whose
                # __sub__ said 0 passed every case with nothing measured
                raise api.CheckError(
                    f"{name} is a {type(value).__name__}, a number of your own class whose "
                    "arithmetic is yours, not a count of bytes: report an int or a float"
                )
        got["_reserved_growth"] = reserved_growth
        del kept, baseline
        return got
    finally:
        if we_trace and tracemalloc.is_tracing():
            tracemalloc.stop()


def _plain_number(value: Any) -> bool:
    """An int or float, or one of NumPy's own scalar types, not a subclass. NumPy's types are
    told by identity: a float subclass that set `__module__ = "numpy"` on itself and answered 0
    to every subtraction passed when they were told by the module's name."""
    import numpy as np

    kind = type(value)
    numpys = {t for t in np.sctypeDict.values() if issubclass(t, np.integer | np.floating)}
    return kind in (int, float) or kind in numpys


def compare(want: dict, got: dict, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    # Allocators round up and Python objects come and go: 2% or 256 KiB, whichever is more.
    for name in FIELDS:
        w, g = want[name], got[name]
        if w is None:
            if g is not None:
                return api.Mismatch(
                    f"reserved_delta = {g!r}, expected None on the CPU (no caching allocator)",
                    expected=None,
                    got=g,
                )
            continue
        # numbers.Real: NumPy's integers count too (a tracker may do its arithmetic in NumPy)
        if not isinstance(g, numbers.Real) or isinstance(g, bool):
            return api.Mismatch(f"{name} = {g!r}, expected a number of bytes")
        if name == "reserved_delta":
            # How much the cache grows depends on what it already held (a warm process may
            # fit the whole block in blocks it kept), so the truth is what the check itself
            # read from memory_reserved() around the same block.
            grew = got.get("_reserved_growth")
            if grew is not None and abs(g - grew) > max(256 * 1024, 0.02 * abs(grew)):
                return api.Mismatch(
                    f"reserved_delta = {g:,.0f} bytes, but memory_reserved() grew by "
                    f"{grew:,} over the block (the freed temporary stays in PyTorch's cache: "
                    "read memory_reserved, not memory_allocated)",
                    expected=grew,
                    got=g,
                )
            continue
        slack = max(256 * 1024, 0.02 * w)
        # PyTorch's caching allocator hands out a whole cached block when what would be left of
        # it is under 1 MiB (it splits a large block only above that), and counts the block as
        # allocated: on an H200, in a warm worker, a 40,902,813 B keep read 41,943,040 (a
        # cached 40 MiB block) and the reference was rejected. Each allocation of the block's
        # may so be up to 1 MiB over: one for the delta (the keep), two for the peak.
        over = 0 if case.args["device"] == "cpu" else _UNSPLIT * (2 if name == "peak_delta" else 1)
        if not -slack <= g - w <= slack + over:
            return api.Mismatch(
                f"{name} = {g:,.0f} bytes, expected about {w:,}",
                expected=w,
                got=g,
                max_error=float(abs(g - w)),
            )
    return None
