"""The process a profiler runs: the learner's kernel at a representative size, nothing else.

`python -m gpulab.explain.target --exercise ID --file PATH` loads the exercise's check and the
learner's file fresh (as the grader does), builds the check's timing inputs at `--fill` bytes
and calls the learner's function `--calls` times, the last inside a profiler range
(cudaProfilerStart to cudaProfilerStop): Nsight Compute (ncu.py) wraps this process and profiles
only that range, so the first call (which compiles and warms up) is never measured, however many
launches it makes; compute-sanitizer (sanitize.py) wraps it with a small `--fill`.

`--driver PATH` replaces the exercise: PATH defines `setup(module, cp) -> callable`, which builds
inputs for the file's function and returns the call to make (the planted-flaw kernels of the
tests have no exercise).

CuPy's memory pool is turned off (a pool hands out slices of larger blocks, so an access past the
end of an array lands in memory the sanitizer counts as allocated), and every RawKernel and
RawModule is compiled with `-lineinfo`, so both tools can name the source line.

Runs only in its own process, on a GPU: main() imports CuPy; importing this module does not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

LINEINFO = "-lineinfo"
EXIT_LEARNER = 3  # the learner's code raised (its message is on stderr)
EXIT_SETUP = 4  # the exercise or the driver could not be loaded


def with_lineinfo(cp: Any) -> None:
    """Make cupy.RawKernel and cupy.RawModule add -lineinfo to their options (the learner's
    file looks them up on the cupy module when it runs, after this)."""
    base_kernel, base_module = cp.RawKernel, cp.RawModule

    def _opts(options: Any) -> tuple[str, ...]:
        opts = tuple(options or ())
        return opts if LINEINFO in opts else (*opts, LINEINFO)

    class RawKernel(base_kernel):  # type: ignore[misc,valid-type]  # CuPy's, at run time
        def __init__(self, code: str, name: str, options: Any = (), *args: Any, **kw: Any):
            super().__init__(code, name, _opts(options), *args, **kw)

    class RawModule(base_module):  # type: ignore[misc,valid-type]  # CuPy's, at run time
        def __init__(self, *args: Any, **kw: Any):  # CuPy's RawModule takes keywords only
            if kw.get("code") is not None:
                kw["options"] = _opts(kw.get("options"))
            super().__init__(*args, **kw)

    cp.RawKernel, cp.RawModule = RawKernel, RawModule


def context(fill_bytes: int, seed: int = 1) -> Any:
    """A check Context on this GPU whose big cases hold about `fill_bytes` in all."""
    import numpy as np

    from gpulab.exercises import api  # deferred: loaded when used

    return api.Context(
        rng=np.random.default_rng(seed),
        seed=seed,
        gpu=True,
        cupy=True,
        device="cuda:0",
        fill_bytes=int(fill_bytes),
        check_bytes=int(fill_bytes),
        phase="timing",
    )


def exercise_call(exercise: str, path: Path, fill_bytes: int) -> Any:
    """The learner's function on the check's timing inputs (input set 0), as a thunk."""
    from gpulab.exercises.loader import find  # deferred: loaded when used
    from gpulab.exercises.run_check import load_check  # deferred: loaded when used
    from gpulab.exercises.sandbox import load_learner  # deferred: loaded when used

    ex = find(exercise)
    check = load_check(ex)
    _, fn = load_learner(path, ex.id, ex.entry)
    ctx = context(fill_bytes)
    if not hasattr(check, "timing"):
        cases = list(check.cases(ctx))
        case = max(cases, key=lambda c: sum(getattr(v, "size", 1) for v in c.args.values()))
        return lambda: check.run(fn, case, ctx)
    spec = check.timing(fn, ctx)
    io = spec.setup(0)
    return lambda: spec.learner(io)


def driver_call(driver: Path, path: Path, cp: Any) -> Any:
    from gpulab.exercises.sandbox import load_text  # deferred: loaded when used

    module = load_text(path.read_text(encoding="utf-8"), path, "_gpulab_target_learner")
    drv = load_text(driver.read_text(encoding="utf-8"), driver, "_gpulab_target_driver")
    return drv.setup(module, cp)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpulab.explain.target")
    p.add_argument("--exercise", help="the exercise whose check builds the inputs")
    p.add_argument("--file", required=True, help="the learner's file")
    p.add_argument("--driver", help="a file with setup(module, cp) instead of an exercise")
    p.add_argument("--fill", type=int, default=64 << 20, help="bytes of input and output")
    p.add_argument("--calls", type=int, default=2, help="calls of the learner's function")
    args = p.parse_args(argv)

    import cupy as cp  # deferred: only this process, run by a profiler on a GPU, uses CuPy

    cp.cuda.set_allocator(None)  # exact allocations: an overrun is outside any allocation
    cp.cuda.set_pinned_memory_allocator(None)
    with_lineinfo(cp)
    path = Path(args.file)
    try:
        if args.driver:
            thunk = driver_call(Path(args.driver), path, cp)
        elif args.exercise:
            thunk = exercise_call(args.exercise, path, args.fill)
        else:
            p.error("give --exercise or --driver")
    except Exception as exc:  # noqa: BLE001 - one line for the parent, which reports it
        print(f"gpulab-target: setup failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_SETUP
    from cupyx.profiler import profile  # cudaProfilerStart and Stop around the with-block

    try:
        for _ in range(max(1, args.calls) - 1):
            thunk()
            cp.cuda.Device().synchronize()
        with profile():
            thunk()
            cp.cuda.Device().synchronize()
    except Exception as exc:  # noqa: BLE001 - the learner's code raised: one line for the parent
        print(f"gpulab-target: your code raised {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_LEARNER
    print("gpulab-target: done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
