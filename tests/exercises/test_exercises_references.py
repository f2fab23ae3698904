"""The GPU exercises' references and tolerances, checked on the CPU.

test_exercises_catalog.py runs every exercise end to end, but the CuPy and CUDA ones only under
-m gpu. Their cases and references are plain NumPy, so CI checks here that the inputs follow the
rules (edge sizes, never zero), that each reference is right (against a direct computation) and
that each tolerance accepts an honest float32 kernel and rejects a wrong one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog

CATALOG = load_catalog()


def _check(exercise_id: str):
    from gpulab.testing.checks import open_check  # why not importlib: its module doc

    return open_check(CATALOG.get(exercise_id))


def _ctx(seed: int = 3) -> api.Context:
    # A GPU context for drawing cases only: nothing here touches a device.
    return api.Context(
        rng=np.random.default_rng(seed), seed=seed, gpu=True, cupy=True, device="cuda:0", quick=True
    )


@pytest.mark.parametrize("exercise_id", ["first-kernel", "grid-2d", "conv2d"])
def test_kernel_exercise_inputs_follow_the_rules(exercise_id):
    check = _check(exercise_id)
    cases = check.cases(_ctx())
    assert len({c.name for c in cases}) == len(cases)
    for case in cases:
        for name, value in case.args.items():
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                assert value.dtype == np.float32, (case.name, name)
                assert np.all(value != 0) or name == "kernel", (case.name, name)
                assert np.all(np.isfinite(value)), (case.name, name)
    if exercise_id == "first-kernel":
        assert set(api.EDGE_SIZES) <= {c.args["x"].size for c in cases}


def _guarded(got: np.ndarray) -> np.ndarray:
    """What kernel_checks.run_guarded hands a kernel check's compare: one run, the output in
    the middle of a poisoned buffer (the kernel exercises' outputs are float32)."""
    from gpulab.exercises import kernel_checks as kc

    flat = np.asarray(got, dtype=np.float32).reshape(-1)
    g = kc.guard_size(flat.size)
    buf = api.poison(flat.size + 2 * g, np.float32)
    buf[g : g + flat.size] = flat
    return buf[None]


def test_saxpy_tolerance_accepts_unfused_float32_and_rejects_a_dropped_term():
    check = _check("first-kernel")
    ctx = _ctx()
    for case in check.cases(ctx):
        want = check.expected(case, ctx)
        a, x, y = np.float32(case.args["a"]), case.args["x"], case.args["y"]
        assert check.compare(want, _guarded(a * x + y), case, ctx) is None, case.name  # no FMA
        wrong = check.compare(want, _guarded(a * x), case, ctx)  # y forgotten
        assert wrong is not None and "expected" in wrong.message


def _direct_correlation(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    h, w = image.shape
    half = kernel.shape[0] // 2
    out = np.zeros((h, w))
    for r in range(h):
        for c in range(w):
            for i in range(kernel.shape[0]):
                for j in range(kernel.shape[1]):
                    rr, cc = r + i - half, c + j - half
                    if 0 <= rr < h and 0 <= cc < w:
                        out[r, c] += float(kernel[i, j]) * float(image[rr, cc])
    return out


def test_conv_reference_is_a_zero_padded_correlation():
    check = _check("conv2d")
    ctx = _ctx()
    small = [c for c in check.cases(ctx) if c.args["image"].size <= 33 * 33]
    assert len(small) >= 5
    for case in small:
        want = check.expected(case, ctx)["out"]
        direct = _direct_correlation(case.args["image"], case.args["kernel"])
        np.testing.assert_allclose(want, direct, rtol=1e-12, atol=1e-12)


def _float32_correlation(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """What a float32 kernel computes: every product and partial sum rounded to float32."""
    kh, kw = kernel.shape
    h, w = image.shape
    pad = np.zeros((h + kh - 1, w + kw - 1), dtype=np.float32)
    pad[kh // 2 : kh // 2 + h, kw // 2 : kw // 2 + w] = image
    acc = np.zeros((h, w), dtype=np.float32)
    for i in range(kh):
        for j in range(kw):
            acc += kernel[i, j] * pad[i : i + h, j : j + w]
    return acc


def test_conv_tolerance_accepts_float32_sums_and_rejects_a_flipped_kernel():
    check = _check("conv2d")
    ctx = _ctx()
    flipped_failed = 0
    for case in check.cases(ctx)[:-1]:
        want = check.expected(case, ctx)
        image, kernel = case.args["image"], case.args["kernel"]
        ours = _float32_correlation(image, kernel)
        assert check.compare(want, _guarded(ours), case, ctx) is None
        flipped = _float32_correlation(image, kernel[::-1, ::-1].copy())
        if not np.array_equal(kernel, kernel[::-1, ::-1]):
            assert check.compare(want, _guarded(flipped), case, ctx) is not None, case.name
            flipped_failed += 1
    assert flipped_failed >= 3


def test_transpose_reference_and_exact_compare():
    check = _check("grid-2d")
    ctx = _ctx()
    cases = check.cases(ctx)
    assert any(c.args["a"].shape[0] != c.args["a"].shape[1] for c in cases)
    for case in cases:
        a = case.args["a"]
        want = check.expected(case, ctx)
        assert want.shape == (a.shape[1], a.shape[0])
        assert check.compare(want, _guarded(a.T.copy()), case, ctx) is None
        if a.size > 1:
            bad = a.T.copy()
            bad.reshape(-1)[-1] = np.nextafter(bad.reshape(-1)[-1], np.float32(np.inf))
            mismatch = check.compare(want, _guarded(bad), case, ctx)
            assert mismatch is not None and mismatch.wrong == 1


def test_honest_timing_compare_names_the_mistake():
    check = _check("honest-timing")
    ctx = _ctx()
    gpu_case = next(c for c in check.cases(ctx) if c.args["device"] != "cpu")
    calls = [5e-3] + [2e-3, 2.1e-3, 1.9e-3, 2.0e-3] * 3  # a cold first call, then warm ones

    def rounds(yours):
        return {"rounds": [{"yours": yours, "calls": calls, "ours": [2e-3] * 10}] * 5}

    assert check.compare(None, rounds(2.05e-3), gpu_case, ctx) is None
    assert "synchronize" in check.compare(None, rounds(1e-5), gpu_case, ctx).message
    assert "not milliseconds" in check.compare(None, rounds(2.0), gpu_case, ctx).message


def test_bandwidth_compare_rejects_figures_above_the_link():
    check = _check("bandwidth")
    ctx = _ctx()
    case = check.cases(ctx)[0]
    want = {"ceiling": 55.0}
    ours = {"pageable": 8.0, "pinned": 50.0, "pageable_low": 8.0, "pageable_high": 8.0}

    def rounds(pageable, pinned):
        return {"rounds": [{"yours": {"pageable": pageable, "pinned": pinned}, "ours": ours}] * 3}

    assert check.compare(want, rounds(8.5, 52.0), case, ctx) is None
    assert "faster than" in check.compare(want, rounds(8.0, 400.0), case, ctx).message
    assert "pinned = " in check.compare(want, rounds(8.0, 8.0), case, ctx).message
    # swapped: pinned below pageable where the check measured pinned 6x faster
    swapped = check.compare(want, rounds(20.0, 16.0), case, ctx).message
    assert "are the two figures swapped?" in swapped and swapped.startswith("pinned = 16.0")
    # pageable: from 0.25x the slower of the check's two ways of copying to 2.5x the faster. A
    # fresh buffer at a third of a kept one's rate (an H200 host) passes; a total of 7 runs,
    # a seventh of the figure, does not (and the pinned figure, with its tight bounds, shows
    # the same mistake whichever way the pageable copy went)
    ours.update(pageable=11.9, pageable_low=4.0, pageable_high=11.9)
    assert check.compare(want, rounds(3.98, 52.0), case, ctx) is None
    assert "pinned = " in check.compare(want, rounds(11.9 / 7, 52.0 / 7), case, ctx).message
    seventh = check.compare(want, rounds(3.98 / 7, 52.0), case, ctx).message
    assert "measured 4.00 to 11.90 GB/s" in seventh and "0.25x the slower" in seventh


def test_bandwidth_compares_interleaved_rounds_and_draws_its_sizes():
    check = _check("bandwidth")
    ctx = _ctx()
    case = check.cases(ctx)[0]
    calm = {"pageable": 8.0, "pinned": 50.0, "pageable_low": 8.0, "pageable_high": 8.0}
    busy = {"pageable": 4.0, "pinned": 25.0, "pageable_low": 4.0, "pageable_high": 4.0}
    # A load that halves the link for a round halves both figures of that round: no verdict.
    got = {
        "rounds": [
            {"yours": calm, "ours": calm},
            {"yours": busy, "ours": busy},
            {"yours": calm, "ours": calm},
        ]
    }
    assert check.compare({"ceiling": 55.0}, got, case, ctx) is None
    full = _ctx()
    full.quick = False
    sizes = {tuple(c.args["nbytes"] for c in check.cases(_ctx(seed))) for seed in range(8)}
    assert len(sizes) > 1, "the sizes come from the seed"
    for (lo, hi), c in zip(check.SIZES_MIB, check.cases(full), strict=True):
        assert lo << 20 <= c.args["nbytes"] <= hi << 20
    statement = CATALOG.get("bandwidth").statement
    assert not re.search(r"\d\+? ?GB/s", statement), "the statement gives the figures away"
