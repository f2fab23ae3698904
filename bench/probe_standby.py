"""A collective exercise's repeat check with ranks standing by and without (gpulab.core.ranks):
the reference checked 4 times in this process, PAUSE seconds apart (a learner's edit), the
standing-by ranks replenished after each check as the worker does when idle, or not.
Usage: python3 bench/probe_standby.py EXERCISE PAUSE 1|0"""

import sys
import time

from gpulab.core import ranks
from gpulab.core.devices import detect
from gpulab.exercises.job import check_inline
from gpulab.exercises.loader import load_catalog


def main():
    name = sys.argv[1]
    pause = float(sys.argv[2])
    use = sys.argv[3] == "1"
    ex = next(e for e in load_catalog() if e.id == name)
    inv = detect()
    for s in (1, 2, 3, 4):
        t = time.perf_counter()
        r, _ = check_inline(ex.id, str(ex.solution_path), s, quick=False, inventory=inv)
        took = time.perf_counter() - t
        print(
            s,
            r.verdict,
            r.grade,
            round(took, 2),
            {k: round(v, 2) for k, v in r.phases.items() if v > 0.05},
            flush=True,
        )
        if use:
            ranks.replenish()
        time.sleep(pause)
    print("standing by:", ranks.standing_by())
    ranks.drop_standby()


if __name__ == "__main__":
    main()
