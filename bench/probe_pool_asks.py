"""Where a collective exercise's timing spends its time: every command the grader sends the
timing pool (setup, prepare, call, verify), timed from the grader's side, over a check of the
reference repeated after one to warm up (ranks standing by, as the worker keeps them).
Usage: python3 bench/probe_pool_asks.py EXERCISE"""

import collections
import sys
import time

from gpulab.core import ranks
from gpulab.core.devices import detect
from gpulab.exercises import rank_pool
from gpulab.exercises.job import check_inline
from gpulab.exercises.loader import load_catalog

SPENT: dict[str, list[float]] = collections.defaultdict(list)
_real_ask = rank_pool.RankPool.ask


def _ask(self, command, *args):
    t = time.perf_counter()
    try:
        return _real_ask(self, command, *args)
    finally:
        SPENT[command].append(time.perf_counter() - t)


def main():
    ex = next(e for e in load_catalog() if e.id == sys.argv[1])
    inv = detect()
    rank_pool.RankPool.ask = _ask
    for s in (1, 2):
        SPENT.clear()
        t = time.perf_counter()
        r, _ = check_inline(ex.id, str(ex.solution_path), s, quick=False, inventory=inv)
        took = time.perf_counter() - t
        print(s, r.verdict, r.grade, round(took, 2), {k: round(v, 3) for k, v in r.phases.items()})
        for command, each in SPENT.items():
            each.sort()
            print(
                f"  {command:8s} n={len(each):3d} total={sum(each) * 1e3:7.1f} ms "
                f"median={each[len(each) // 2] * 1e3:6.2f} ms max={each[-1] * 1e3:6.2f} ms"
            )
        ranks.replenish()
        time.sleep(4)
    ranks.drop_standby()


if __name__ == "__main__":
    main()
