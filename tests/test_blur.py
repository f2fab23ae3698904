"""Blur: weights, CPU contender vs the float64 reference, bad images, GPU kernels vs reference."""

from __future__ import annotations

import numpy as np
import pytest
from headline_checks import assert_headline

from gpulab.core.devices import Inventory, detect
from gpulab.core.params import ParamError
from gpulab.experiments import blur, blur_filters, blur_images, blur_kernel
from gpulab.experiments.base import Context, ExperimentError


def _run(inventory=None, **params):
    exp = blur.EXPERIMENT
    p = exp.params.validate({"width": 64, "height": 48, **params})
    exp.check(p, inventory or Inventory())
    return exp.run(Context(inventory=inventory or detect(), quick=True), p)


@pytest.mark.parametrize("kind", blur_filters.KERNELS)
def test_weights(kind):
    w = blur_filters.weights_2d(kind, 3)
    assert w.shape == (7, 7) and w.dtype == np.float32
    assert np.allclose(w, w.T) and np.allclose(w, w[::-1, ::-1])
    assert abs(w.sum() - {"gaussian": 1, "box": 1, "sharpen": 1, "edge": 0}[kind]) < 1e-6


@pytest.mark.parametrize("kind", blur_filters.KERNELS)
def test_cpu_filter_equals_direct_2d_stencil(kind):
    rng = np.random.default_rng(1)
    planes = rng.random((3, 20, 23))
    r = 2
    w = blur_filters.weights_2d(kind, r).astype(np.float64)
    pad = np.pad(planes, ((0, 0), (r, r), (r, r)), mode="edge")
    direct = np.zeros_like(planes)
    for dy in range(2 * r + 1):
        for dx in range(2 * r + 1):
            direct += w[dy, dx] * pad[:, dy : dy + 20, dx : dx + 23]
    for use_scipy in (True, False):
        got = blur_filters.cpu_filter(planes, kind, r, use_scipy=use_scipy)
        assert np.max(np.abs(got - direct)) < 1e-6


@pytest.mark.parametrize("kind", blur_filters.KERNELS)
def test_cpu_contender_passes_and_saves_images(kind):
    res = _run(kernel=kind, radius=3)
    assert "scipy" in {m.contender for m in res.measurements}
    assert res.passed, res.verdicts
    kinds = [a.kind for a in res.artifacts]
    assert kinds == ["image", "image"]
    assert_headline("blur", res.to_dict())
    from PIL import Image

    with Image.open(res.artifacts[1].path) as im:
        assert im.size == (64, 48)


def test_numpy_fallback_without_scipy(monkeypatch):
    monkeypatch.setattr(blur, "have_scipy", lambda: False)
    res = _run(Inventory(), kernel="box", radius=1)
    assert res.passed and "NumPy" in res.measurements[0].note
    # The row is labelled with what ran, never as SciPy's; SciPy's slot says why it did not.
    assert [m.contender for m in res.measurements] == ["numpy-slices"]
    assert res.measurements[0].extra["impl"] == "numpy"
    assert "not installed" in res.unavailable["scipy"]
    assert "numpy-slices" not in res.unavailable


def test_only_one_cpu_filter_is_offered(monkeypatch):
    import importlib.util

    with_scipy = blur.EXPERIMENT.availability(Inventory())
    assert with_scipy["scipy"] == "" and with_scipy["numpy-slices"]  # SciPy is installed here
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a)
    )
    without = blur.EXPERIMENT.availability(Inventory())
    assert without["numpy-slices"] == "" and "pip install scipy" in without["scipy"]


def test_unavailable_gpu_contenders_listed_with_the_hint():
    inv = detect()
    if inv.available("cupy"):
        pytest.skip("CuPy is installed here")
    res = _run(inv)
    assert "cupy" in res.unavailable["cupy-kernel"].lower()
    assert "pip install" in res.unavailable["cupy-kernel"]


def test_builtin_and_path_images(tmp_path):
    img = blur_images.load_image("testcard", 0, 0)
    assert img.shape == (360, 640, 3) and img.min() >= 0 and img.max() <= 1
    assert blur_images.load_image("testcard", 32, 16).shape == (16, 32, 3)


def test_missing_and_corrupt_images_are_refused_with_the_params(tmp_path):
    """Refused by validation (the CLI, the form, the runner's submit), before any work."""
    params = blur.EXPERIMENT.params
    with pytest.raises(ParamError, match="does not exist"):
        params.validate({"image": str(tmp_path / "nope.png")})
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG not really")
    with pytest.raises(ParamError, match="is not an image file") as info:
        params.validate({"image": str(bad)})
    assert "\n" not in str(info.value)
    with pytest.raises(ExperimentError, match="could not be read"):
        blur_images.load_image(str(bad), 0, 0)  # the run's own guard, for a file changed since


def test_synthetic_image_has_detail():
    img = blur_images.synthetic_image(96, 54)
    assert img.shape == (54, 96, 3) and img.dtype == np.float32
    assert img.std() > 0.2


@pytest.mark.gpu
@pytest.mark.parametrize("kind", blur_filters.KERNELS)
@pytest.mark.parametrize("radius", [1, 2, 7, 15])
@pytest.mark.parametrize("shape", [(3, 37, 45), (3, 130, 260)])
def test_gpu_kernels_match_reference(kind, radius, shape):
    cp = pytest.importorskip("cupy")
    planes = np.random.default_rng(radius).random(shape, dtype=np.float32)
    ref = blur_filters.cpu_filter(planes.astype(np.float64), kind, radius)
    k = blur_kernel.BlurKernel(radius)
    variants = ["blur_2d"] + (["blur_sep"] if kind in blur_filters.SEPARABLE else [])
    if kind in blur_filters.SEPARABLE and shape[2] % 4 == 0:
        variants.append("blur_sep_v4")
        if radius <= blur_kernel.REG_MAX_RADIUS:
            variants.append("blur_sep_reg")
    for variant in variants:
        src = cp.asarray(planes)
        dst = cp.full_like(src, cp.nan)
        k.launcher(src, dst, kind, variant)()
        out = cp.asnumpy(dst)
        assert np.isfinite(out).all(), variant
        assert np.max(np.abs(out - ref)) <= blur.TOLERANCE, variant


@pytest.mark.gpu
def test_gpu_run_all_contenders_pass():
    res = _run(detect(), width=640, height=360, kernel="gaussian", radius=2)
    assert res.passed
    assert {"torch", "scipy"} <= {m.contender for m in res.measurements}
    # The headline names our kernel where CuPy ran it, else torch (the order the headline uses)
    rows = {m.contender: m for m in res.measurements}
    best = rows.get("cupy-kernel") or rows["torch"]
    assert f"ran at {best.percent_of_peak:.0f}% of this GPU's copy bandwidth" in res.headline


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", blur_filters.KERNELS)
def test_gpu_library_contenders_match_the_reference(kernel):
    """cupyx.scipy.ndimage and the separable torch blur (lessons 08 and 17 quote both): same
    image, borders and weights as the reference, within the same 1e-5."""
    from conftest import cupy_available

    res = _run(detect(), width=640, height=360, kernel=kernel, radius=3)
    want = {"torch-separable"} | ({"cupyx"} if cupy_available() else set())
    verdicts = {v.contender: v for v in res.verdicts}
    for cid in want:
        assert verdicts[cid].passed, verdicts[cid]
    rows = {m.contender: m for m in res.measurements}
    for cid in want:
        assert rows[cid].percent_of_peak is not None and rows[cid].unit == "GB/s"
