"""Where one repeat check's seconds go, function by function (cProfile): the first check warms
(compiles, caches), the second is profiled. Usage: python3 bench/profile_check.py EXERCISE [N]"""

import cProfile
import pstats
import sys

from gpulab.core.devices import detect
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
pstats.Stats(prof).sort_stats("cumulative").print_stats(top)
pstats.Stats(prof).sort_stats("tottime").print_stats(top)
