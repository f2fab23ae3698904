"""Running an exercise's check from a test, as `gpulab ex check` would: CPU exercises inline,
GPU and CuPy ones through a real worker (tests/exercises/test_exercises_catalog.py and
test_lessons_pass_no_check.py share it)."""

from __future__ import annotations

import asyncio
import functools
import threading
from pathlib import Path

import pytest

from gpulab.exercises.job import check_inline


@functools.cache
def inventory():
    from gpulab.core.devices import detect

    return detect()


class _WorkerChecks:
    """GPU checks go through a real worker, as `gpulab ex check` runs them: a known-wrong kernel
    that writes out of bounds can poison the CUDA context of the process it runs in, and the
    runner replaces the worker where an inline check would leave every later test broken."""

    def __init__(self) -> None:
        from gpulab.ex.session import Checker

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.checker = Checker(quick=True)
        self._call(self.checker.__aenter__())

    def _call(self, coro, timeout: float = 600):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def check(self, ex, path, seed, first_failure=False):
        return self._call(self.checker.check(ex, Path(path), seed, first_failure=first_failure))[0]

    def close(self) -> None:
        self._call(self.checker.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


_WORKER: list[_WorkerChecks] = []


def close_worker() -> None:
    """End the worker the GPU checks started (a module's teardown)."""
    while _WORKER:
        _WORKER.pop().close()


def needs_device(ex) -> bool:
    """Whether the exercise's check runs only on a GPU (torch CUDA or CuPy)."""
    return bool(set(ex.needs) & {"gpu", "cupy"})


def has_cuda() -> bool:
    """Whether this machine has a CUDA GPU the checks will use."""
    return any(d.kind == "cuda" for d in inventory().devices)


def runs_on_a_gpu_here(ex) -> bool:
    """Whether the check will use this machine's GPU: a Triton exercise runs in the interpreter
    without one and compiled with one, where a known-wrong kernel can fault like any other."""
    return needs_device(ex) or (has_cuda() and "triton" in ex.needs)


# Known-wrong files that leave a thread started in C running in the process that loads them
# (gloo's, torch's inter-op pool): the grader refuses them and retires its worker, but inline
# the thread would stay in the test process (gloo's aborts the interpreter at its exit)
LEAVE_THREADS = {
    "gloo-callback-serves-the-sum",
    "gloo-callback-started-in-a-call",
    "interop-thread-serves-the-sum",
    "gloo-thread-renamed",
}


def check_wrong(ex, wrong, seed):
    """A known-wrong file's result: stopped at its first wrong input set, or checked whole when
    that set's message is not the one the file names (a later set raised it)."""
    result = check(ex, wrong.path, seed, first_failure=True)
    if result.verdict == "fail" and not wrong.matches(result.message):
        result = check(ex, wrong.path, seed)
    return result


def check(ex, path, seed, first_failure=False):
    """The check's result for the file at `path` (`first_failure`: stop at the first wrong input
    set, for a known-wrong file)."""
    if runs_on_a_gpu_here(ex) or Path(path).stem in LEAVE_THREADS:
        if not _WORKER:
            _WORKER.append(_WorkerChecks())
        return _WORKER[0].check(ex, path, seed, first_failure)
    return check_inline(
        ex.id, str(path), seed, quick=True, inventory=inventory(), first_failure=first_failure
    )[0]


# Checks that cannot share the GPU with other work and mean anything: each reads the learner's
# own timer (honest-timing, bandwidth), or grades a saving over a baseline that only shows on an
# idle GPU (the ratio rules: when our own solution saves under 1.15x the speed rule stands down,
# and a wrong/ caught by speed alone passes). On a GPU another test is using, phase 1 of
# bench/gpu_suite_one.sh, an H200 rejected the references of the first two and passed two
# streams-overlap wrong/.
ALONE = {
    "honest-timing",
    "bandwidth",
    "streams-overlap",
    "compile-fused",
    "cuda-graphs",
    "profile-step",
}


# Of those, the checks that time copies between host and GPU: on a 2-GPU H200 host, with a test
# on the other GPU, streams-overlap's reference saved nothing over the serial pipeline (0.90x,
# ours 1.78x in the same rounds) and its starter passed; both passed with the host to themselves
HOST = {"bandwidth", "streams-overlap"}


def marks(ex):
    if not needs_device(ex):
        return []
    if ex.id in HOST:
        return [pytest.mark.gpu, pytest.mark.alone, pytest.mark.host]
    return [pytest.mark.gpu, pytest.mark.alone] if ex.id in ALONE else [pytest.mark.gpu]
