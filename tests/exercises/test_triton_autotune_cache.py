"""On a GPU, the Triton exercises turn on Triton's own disk cache of autotune timings: a check
makes the learner's autotuner anew, and it timed every config at every case's shape again
(4.4 s of triton-matmul's 6.3 s repeat check on an H200) for a kernel that had not changed. The
cache is keyed on the kernel's source, so an edited kernel is tuned again; a setting of the
learner's own is kept. Without a GPU the interpreter runs, and Triton caches nothing there."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.exercises import api, triton_checks

triton = pytest.importorskip("triton")


def _autotuned():
    @triton.jit
    def kernel(x, BLOCK: triton.language.constexpr):
        pass

    return triton.autotune(
        configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[]
    )(kernel)


def _gpu() -> api.Context:
    return api.Context(np.random.default_rng(1), 1, gpu=True, cupy=False, device="cuda:0")


def test_a_gpu_check_caches_autotune_timings(monkeypatch):
    monkeypatch.delenv("TRITON_CACHE_AUTOTUNING", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert not _autotuned().cache_results  # Triton's default: every autotuner times anew
    assert triton_checks.use_interpreter(_gpu()) is False
    assert _autotuned().cache_results


def test_the_learners_own_setting_is_kept(monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "0")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    triton_checks.use_interpreter(_gpu())
    assert not _autotuned().cache_results
