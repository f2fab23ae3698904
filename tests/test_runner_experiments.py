"""Experiments that exist only for the runner tests (no tests in this module).

The worker imports it through GPULAB_WORKER_PRELOAD, which adds the experiments below to its
registry; the test process adds them with install() for the runner tests only.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import RETIRE_WORKER, Result
from gpulab.experiments.base import Context, Experiment
from gpulab.experiments.registry import all_experiments

LONG_LINE = 200_000


class Noisy(Experiment):
    """Writes to stdout and stderr every way there is, including bytes that look like frames."""

    id = "test-noisy"
    title = "noisy (test)"
    params = ParamSet((Int("lines", 3, "plain lines to print", min=0, max=100),))

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        for i in range(params["lines"]):
            print(f"plain print {i}")
        print('\x00\x00\x00\x10{"msg":"hello"}', end="")  # a fake frame header, no newline
        print(" <- not a frame")
        sys.stderr.write("python stderr line\n")
        os.write(1, b"\x00\x00\x00\x05raw bytes on fd 1\n")
        os.write(2, b"raw bytes on fd 2\n")
        os.write(2, b"y" * LONG_LINE + b"\n")  # a raw line longer than any pipe reader's limit
        print("x" * LONG_LINE)
        print("a partial line at the end", end="")
        ctx.progress(1.0, "printed")
        result = self.new_result(ctx, params)
        result.summary = {"printed": params["lines"]}
        return self.finish(result)


class Raises(Experiment):
    id = "test-raise"
    title = "raises (test)"
    params = ParamSet((Int("value", 42, "the value in the message", min=0, max=1000),))

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        ctx.progress(0.5, "about to fail")
        raise ValueError(f"bad value {params['value']}")


class IllegalAddress(Experiment):
    """What CUDA raises after a kernel wrote out of bounds, without a GPU: the worker retires."""

    id = "test-illegal-address"
    title = "illegal address, simulated (test)"
    params = ParamSet(())

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        ctx.progress(0.5, "about to fail")
        raise RuntimeError("CUDA error: an illegal memory access was encountered")


class LeavesAThread(Experiment):
    """A job whose code left something running (a refused learner's file): its result asks the
    worker to retire after sending it."""

    id = "test-leaves-a-thread"
    title = "a job that leaves a thread running (test)"
    params = ParamSet(())

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        result = self.new_result(ctx, params)
        result.summary[RETIRE_WORKER] = "the job left a thread running"
        return self.finish(result)


EXPERIMENTS = (Noisy(), Raises(), IllegalAddress(), LeavesAThread())


def install() -> None:
    exps = all_experiments()
    for exp in EXPERIMENTS:
        exps.setdefault(exp.id, exp)


def uninstall() -> None:
    exps = all_experiments()
    for exp in EXPERIMENTS:
        exps.pop(exp.id, None)


# In the worker, importing is installing; the test process installs them only for its tests.
if __name__ in os.environ.get("GPULAB_WORKER_PRELOAD", "").split(","):
    install()
