"""Why a Triton reference grades about half of itself (triton-causal-softmax on an H200).

    python bench/probe_triton_yardstick.py [EXERCISE] [--out FILE]

At b3189f9 and after, triton-causal-softmax's reference read 0.33 to 0.53 of its yardstick, the
same file timed in the same rounds, on two H200 hosts; at 6073962 it graded silver or better.
The hooks read and the input sample's wait were ruled out (each fixed, rerun, still bronze).
This checks the reference several times in one process, each time with one suspect of the
grader changed, and prints what the grade reads (the learner's and the yardstick's medians,
their ratio's interval, the clock window):

  as-is        the grader as committed
  no-sample    TimingSpec.inputs off: no input sample before and after each timed call
  gc-on        the collector left as it was around the calls (speed's gc.disable a no-op)
  lead-1ms     a 1 ms spin ahead of each start event instead of 200 us (host time hidden)
  no-modes     the check's ALLOW off: no TorchFunctionMode or TorchDispatchMode in the call

Then each contender's kernels, from torch.profiler over one more check: the device time of
the learner's kernel against the yardstick's (the same kernel) says whether the gap is the
GPU's work or the host's time inside the window.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from gpulab.exercises import run_check as rc
from gpulab.exercises import speed
from gpulab.exercises import triton_checks as tc
from gpulab.exercises.job import check_inline
from gpulab.exercises.loader import load_catalog


@contextlib.contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _no_sample() -> contextlib.AbstractContextManager[None]:
    real = tc.spec

    def spec(*args: Any, **kwargs: Any) -> Any:
        return dataclasses.replace(real(*args, **kwargs), inputs=None)

    return _patched(tc, "spec", spec)


class _GcOn:
    """speed's view of gc with disable() a no-op."""

    def __getattr__(self, name: str) -> Any:
        import gc

        return (lambda: None) if name == "disable" else getattr(gc, name)


def _lead(us: float) -> contextlib.AbstractContextManager[None]:
    from gpulab.core.lead import spin

    return _patched(speed, "lead_spin", lambda sync, index=0: spin(sync, index, us))


def _summary(result: Any) -> dict[str, Any]:
    t = result.timing or {}
    ys = t.get("yardstick") or {}
    return {
        "verdict": result.verdict,
        "grade": result.grade,
        "message": result.message[:200],
        "learner_median_us": round(1e6 * (t.get("learner") or {}).get("median_s", 0.0), 1),
        "yardstick_median_us": round(1e6 * ys.get("median_s", 0.0), 1),
        "of_yardstick": t.get("of_yardstick"),
        "lead_us": t.get("lead_us"),
        "window": t.get("window"),
        "retimed": t.get("retimed"),
    }


def _kernels(ex_id: str, path: str) -> list[dict[str, Any]]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        check_inline(ex_id, path, 1234, quick=False)
        torch.cuda.synchronize()
    rows = []
    for e in prof.events():
        dev = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
        if dev and any(k in e.name for k in ("softmax", "affine", "matmul")):
            rows.append({"name": e.name[:60], "us": round(dev, 1)})
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("exercise", nargs="?", default="triton-causal-softmax")
    p.add_argument("--out")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    ex = load_catalog().get(args.exercise)
    path = str(ex.solution_path)
    variants: list[tuple[str, Any]] = [
        ("as-is", contextlib.nullcontext),
        ("no-sample", _no_sample),
        ("gc-on", lambda: _patched(speed, "gc", _GcOn())),
        ("lead-1ms", lambda: _lead(1000.0)),
        ("no-modes", lambda: _patched(rc, "_refusing", lambda refuse: None)),
        ("as-is again", contextlib.nullcontext),
    ]
    out: dict[str, Any] = {"exercise": args.exercise}
    for name, make in variants:
        with make():
            result, _ = check_inline(args.exercise, path, 1234, quick=False)
        out[name] = _summary(result)
        s = out[name]
        print(
            f"{name:12s} {s['grade']!s:7s} learner {s['learner_median_us']} us, yardstick "
            f"{s['yardstick_median_us']} us, of yardstick {s['of_yardstick']}",
            flush=True,
        )
    if args.profile:
        out["kernels"] = _kernels(args.exercise, path)
        print(json.dumps(out["kernels"][:40]))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
