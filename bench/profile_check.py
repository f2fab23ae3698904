"""Where one repeat check's seconds go, function by function (cProfile): the first check warms
(compiles, caches), the second is profiled, a third is timed plain (no profiler) with the
garbage collector's pauses and each kernel-trace read timed on their own.
Usage: python3 bench/profile_check.py EXERCISE [N]"""

import cProfile
import gc
import pstats
import sys
import time

from gpulab.core.devices import detect
from gpulab.exercises import kernel_trace
from gpulab.exercises.job import check_inline
from gpulab.exercises.loader import load_catalog

ex = next(e for e in load_catalog() if e.id == sys.argv[1])
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
inv = detect()
first, _ = check_inline(ex.id, str(ex.solution_path), 1, quick=False, inventory=inv)
print("warm check:", first.verdict, f"{first.seconds:.2f} s", first.phases)
prof = cProfile.Profile()
prof.enable()
second, _ = check_inline(ex.id, str(ex.solution_path), 2, quick=False, inventory=inv)
prof.disable()
print("profiled check:", second.verdict, f"{second.seconds:.2f} s", second.phases)

pauses: list[tuple[int, float]] = []
started: list[float] = []


def _gc(phase: str, info: dict) -> None:
    if phase == "start":
        started.append(time.perf_counter())
    elif started:
        pauses.append((info["generation"], time.perf_counter() - started.pop()))


reads: list[tuple[int, float]] = []
plain_kernels = kernel_trace.kernels


def _timed_kernels(p):
    t = time.perf_counter()
    out = plain_kernels(p)
    reads.append((len(out), time.perf_counter() - t))
    return out


gc.callbacks.append(_gc)
kernel_trace.kernels = _timed_kernels
third, _ = check_inline(ex.id, str(ex.solution_path), 3, quick=False, inventory=inv)
gc.callbacks.remove(_gc)
kernel_trace.kernels = plain_kernels
print("plain check:", third.verdict, f"{third.seconds:.2f} s", third.phases)
for g in (0, 1, 2):
    mine = [d for gen, d in pauses if gen == g]
    print(
        f"gc generation {g}: {len(mine)} pauses, {sum(mine):.3f} s, longest {max(mine, default=0):.3f} s"
    )
print(f"gc objects tracked: {len(gc.get_objects())}; frozen: {gc.get_freeze_count()}")
print(
    f"kernel-trace reads: {len(reads)}, {sum(d for _, d in reads):.3f} s, longest "
    f"{max((d for _, d in reads), default=0):.3f} s, kernels a read up to {max((k for k, _ in reads), default=0)}"
)
pstats.Stats(prof).sort_stats("cumulative").print_stats(top)
pstats.Stats(prof).sort_stats("tottime").print_stats(top)
