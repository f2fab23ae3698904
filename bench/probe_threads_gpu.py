"""On a GPU: which named native threads does a check leave running when the learner's file is
one of ours (a reference, an expert, a right/)? The end-of-check thread rule fails a check only
on the CPU until this is known: CUPTI (the profiler), the CUDA driver, Triton, Inductor or NCCL
may start threads of their own that name themselves. Every file is checked inline in this one
process, as a worker would, and each check's new named threads not Python's are printed.
Usage: python3 bench/probe_threads_gpu.py [EXERCISE ...]"""

import sys
import threading
import time
from collections import Counter

from gpulab.core.devices import detect
from gpulab.exercises import run_check, sandbox
from gpulab.exercises.job import check_inline
from gpulab.exercises.loader import load_catalog

seen: list[list[str]] = []
real = sandbox.foreign_threads


def recording(before):
    names = real(before)
    python = {t.native_id for t in threading.enumerate()}
    new = Counter(n for t, n in sandbox.native_threads().items() if t not in set(before) | python)
    seen.append([*names, f"(every new native thread: {dict(new)})"])
    return names


def main() -> None:
    run_check.foreign_threads = recording  # the name _retiring reads at each check's end
    inv = detect()
    print("inherited names:", sorted(sandbox._inherited_names(sandbox.native_threads())))
    wanted = set(sys.argv[1:])
    for ex in load_catalog():
        if wanted and ex.id not in wanted:
            continue
        if ex.unavailable(inv):
            continue
        files = [("reference", ex.solution_path)]
        if ex.has_expert:
            files.append(("expert", ex.expert_path))
        files += [(f"right/{r.name}", r.path) for r in ex.right]
        for label, path in files:
            seen.clear()
            t0 = time.perf_counter()
            try:
                result, _ = check_inline(ex.id, str(path), 1, quick=True, inventory=inv)
                verdict, retire = result.verdict, result.retire
            except Exception as exc:  # noqa: BLE001 (a probe reports and goes on)
                verdict, retire = f"error {type(exc).__name__}: {exc}"[:120], ""
            names = seen[-1] if seen else []
            print(
                f"{ex.id:22s} {label:36s} {verdict:5s} {time.perf_counter() - t0:6.1f} s "
                f"threads={names} retire={retire!r}",
                flush=True,
            )


# Ranked exercises start their ranks by spawning: each re-imports this file, which must not
# run the probe again
if __name__ == "__main__":
    main()
