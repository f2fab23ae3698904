"""The chunked element scan behind compare_arrays agrees with the whole-array formula everywhere,
chunk boundaries included (a wrong element in the last chunk, one just past a boundary)."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.exercises import api, compare


def whole_array(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[int, int]:
    """The formula the scan replaces, for reference: (count, first flat index or -1)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    if got.dtype.kind in "iub":
        bad = got != want
    else:
        bad = ~(np.abs(g - w) <= atol + rtol * np.abs(w))
        bad &= np.isfinite(w)
        bad |= ~np.isfinite(w) & (g != w)
    flat = bad.reshape(-1)
    return int(flat.sum()), int(np.argmax(flat)) if flat.any() else -1


N = 3 * compare.CHUNK + 17  # three full chunks and a short one


@pytest.mark.parametrize(
    "where",
    [[], [0], [compare.CHUNK], [compare.CHUNK - 1, N - 1], [N - 1], [5, 2 * compare.CHUNK + 3]],
)
@pytest.mark.parametrize("poison", ["nan", "inf", "off"])
def test_scan_agrees_with_the_whole_array_formula(where, poison):
    rng = np.random.default_rng(7)
    want = rng.uniform(-1000, 1000, N)
    got = want.astype(np.float32)
    for i in where:
        got[i] = {"nan": np.nan, "inf": np.inf, "off": got[i] * 1.01 + 1}[poison]
    rtol, atol = api.tolerance(np.float32)
    found = compare.scan(got, want, rtol, atol)
    assert found == whole_array(got, want, rtol, atol)
    assert found == (len(where), min(where) if where else -1)


def test_scan_of_a_transposed_reference_and_of_integers():
    rng = np.random.default_rng(3)
    a = rng.uniform(-10, 10, (700, 1300)).astype(np.float32)
    want = a.T.astype(np.float64)  # Fortran-ordered, as a transpose check's reference is
    got = np.ascontiguousarray(a.T)
    got[650, 3] = np.nan
    bad = api.compare_arrays(want, got)
    assert bad is not None and bad.index == (650, 3) and bad.wrong == 1
    ints = rng.integers(-5, 5, N)
    mine = ints.astype(np.int32)
    mine[N - 2] += 1
    bad = api.compare_arrays(ints, mine)
    assert bad is not None and bad.index == N - 2 and bad.wrong == 1 and bad.max_error == 1.0


def test_an_infinite_reference_matched_by_infinity_is_right():
    want = np.array([np.inf, 1.0, -np.inf])
    assert api.compare_arrays(want, want.astype(np.float32)) is None
    bad = api.compare_arrays(want, np.array([np.inf, np.nan, -np.inf], dtype=np.float32))
    assert bad is not None and bad.index == 1 and "never written" in bad.message
    # the wrong infinity is wrong (the tolerance formula alone gives inf <= inf)
    bad = api.compare_arrays(want, np.array([-np.inf, 1.0, -np.inf], dtype=np.float32))
    assert bad is not None and bad.index == 0 and bad.wrong == 1


@pytest.mark.parametrize(
    "want_dtype,got_dtype",
    [("float32", "float32"), ("float16", "float16"), ("int32", "int32"), ("int64", "float32")],
)
def test_a_reference_in_its_own_dtype_reads_as_its_float64_copy(want_dtype, got_dtype):
    # kernel_checks.spec's verify no longer copies the library's output to float64 first
    rng = np.random.default_rng(3)
    want = (rng.random(5000) * 100).astype(want_dtype)
    got = want.astype(got_dtype)
    got[[7, 4000]] = got[[7, 4000]] + 1
    got[9] = np.nan if got.dtype.kind == "f" else got[9] - 2
    a = api.compare_arrays(want.astype(np.float64), got)
    b = api.compare_arrays(want, got)
    assert a is not None and b is not None
    same = ("index", "wrong", "max_error", "expected", "got")
    assert [getattr(a, k) for k in same] == [getattr(b, k) for k in same]
    if want.dtype.kind == "f":
        assert a.message == b.message
    else:  # an integer reference is named as one: "expected 15", not "15.0"
        assert f"expected {b.expected}" in b.message and isinstance(b.expected, int)
