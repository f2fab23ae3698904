"""Blur (2-D convolution): SciPy on the CPU, torch conv2d on the GPU, and our own CuPy kernel.

Images are float32 in [0, 1], planar (3 planes of H x W). Kernels (all symmetric, so convolution
and correlation agree):
- gaussian: sigma = radius / 2, normalised; box: 1 / (2r+1) per tap. Both separable.
- sharpen: 2 * identity - gaussian (an unsharp mask); edge: identity - box (a high-pass; at radius
  1 it is the 8-neighbour Laplacian over 9). Both run as true 2-D stencils on the GPU.
Border mode everywhere: clamp (an outside pixel takes the nearest edge pixel): scipy
mode="nearest", torch F.pad(mode="replicate"), clamped indices in kernels/blur.cu.

Verification: max abs error against a float64 CPU reference <= 1e-5. The reference uses the same
float32-rounded weights; sharpen and edge are computed through their identities (2x - gaussian,
x - box), which equal the 2-D stencil in exact arithmetic and cost a separable pass, not (2r+1)^2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gpulab.core.params import Choice, Int, ParamSet, Text
from gpulab.core.results import Artifact, Result, Verdict
from gpulab.experiments import blur_library
from gpulab.experiments import syllabus_support as sup
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.common import row

KERNELS = ("gaussian", "box", "sharpen", "edge")
SEPARABLE = ("gaussian", "box")
IMAGES_DIR = Path(__file__).with_name("images")
KERNEL_PATH = Path(__file__).with_name("kernels") / "blur.cu"
BUILTIN = {"testcard": IMAGES_DIR / "testcard.png"}
SYNTHETIC_DEFAULT = (3840, 2160)
TOLERANCE = 1e-5
# Host bytes per value (pixel x channel) of a run: the float32 planes (4), the float64
# reference (8) and, while it is made, a float64 copy of the planes and SciPy's intermediate
# pass (16; 24 for sharpen and edge), the three contenders' float32 outputs (12), and a
# contender's own intermediate and output inside its timed call (8).
HOST_BYTES_PER_VALUE = 56
# GPU bytes per byte of the float32 image: torch's input, padded input and output (kept by its
# caching allocator), our kernel's input and output, then the library contenders' own input,
# padded and intermediate passes and output (cupyx, the separable torch blur).
DEVICE_IMAGES = 10


def fit_bytes(width: int, height: int, *, host: bool) -> int:
    """Memory of a run on a width x height RGB image, on the host or on the GPU."""
    values = 3 * width * height
    if host:
        return int(HOST_BYTES_PER_VALUE * values * 1.05) + sup.HOST_SLACK_BYTES
    return int(DEVICE_IMAGES * 4 * values * 1.05) + sup.SLACK_BYTES


def check_image(spec: str) -> str | None:
    """The image parameter's check, made wherever params are validated (CLI, form, runner):
    a built-in name, or a file that exists, can be read and has a decodable header."""
    if spec in ("synthetic", *BUILTIN):
        return None
    from gpulab.core.files import image_problem

    return image_problem(spec)


def check_side(value: int) -> str | None:
    """width and height: 0 (the image's own) or 16 pixels at least."""
    return "is too small (16 at least, or 0 for the image's own)" if 0 < value < 16 else None


def tile_for(radius: int) -> tuple[int, int]:
    """Output tile (width, height) per block, from bench/tune_kernels.py on an H200 (4K RGB):
    r=2 sep_v4: (128, 16) 0.081 ms, (64, 32) 0.082, (64, 16) 0.092; r=7: (64, 32) 0.124 ms,
    (128, 16) 0.130. Wide tiles at large radii would pass the 48 KB static shared-memory limit."""
    return (128, 16) if radius <= 4 else (64, 32)


# ---------------------------------------------------------------------------- weights


def weights_1d(kind: str, radius: int):
    """The 1-D float32 taps of a separable kernel (gaussian or box)."""
    import numpy as np

    k = np.arange(-radius, radius + 1, dtype=np.float64)
    if kind == "box":
        w = np.ones_like(k)
    else:
        sigma = radius / 2.0
        w = np.exp(-0.5 * (k / sigma) ** 2)
    return (w / w.sum()).astype(np.float32)


def weights_2d(kind: str, radius: int):
    """The full (2r+1)^2 float32 stencil, for any of the four kernels."""
    import numpy as np

    size = 2 * radius + 1
    if kind in SEPARABLE:
        w = weights_1d(kind, radius).astype(np.float64)
        return np.outer(w, w).astype(np.float32)
    base = weights_1d("gaussian" if kind == "sharpen" else "box", radius).astype(np.float64)
    smooth = np.outer(base, base)
    ident = np.zeros((size, size))
    ident[radius, radius] = 1.0
    out = 2 * ident - smooth if kind == "sharpen" else ident - smooth
    return out.astype(np.float32)


# ---------------------------------------------------------------------------- images


def synthetic_image(width: int, height: int):
    """A procedural test card (H, W, 3) float32 in [0, 1]: bars, rings, a checkerboard, lines."""
    import numpy as np

    u = (np.arange(width, dtype=np.float32) + 0.5) / width
    v = (np.arange(height, dtype=np.float32) + 0.5) / height
    uu, vv = u[None, :], v[:, None]
    img = np.empty((height, width, 3), dtype=np.float32)
    img[..., 0] = uu * (1 - 0.5 * vv)
    img[..., 1] = vv * (0.8 + 0.2 * uu)
    img[..., 2] = 1 - 0.7 * uu
    bars = np.array(
        [[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]],
        dtype=np.float32,
    )
    top = int(height * 0.3)
    idx = np.minimum((u * len(bars)).astype(int), len(bars) - 1)
    img[:top] = bars[idx][None, :, :]
    # Rings on the right: fine detail a blur smooths out and an edge filter lights up.
    cy, cx = 0.65 * height, 0.72 * width
    yy, xx = np.ogrid[top:height, 0:width]
    rr = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2, dtype=np.float32) / min(width, height)
    rings = (np.sin(rr * 90.0) > 0).astype(np.float32)
    mask = rr < 0.3
    for c, tint in enumerate((1.0, 0.85, 0.3)):
        plane = img[top:, :, c]
        plane[mask] = rings[mask] * tint
    # A checkerboard bottom-left and a grid of one-pixel lines.
    cell = max(2, height // 27)
    checker = (((yy // cell) + (xx // cell)) % 2).astype(np.float32)
    region = (xx < width * 0.35) & (yy > height * 0.55)
    for c in range(3):
        plane = img[top:, :, c]
        plane[region] = checker[region]
    step = max(8, width // 32)
    img[:, ::step] = 1.0
    img[top::step, :] = 1.0
    return img


def load_image(spec: str, width: int, height: int):
    """(H, W, 3) float32 in [0, 1] from 'synthetic', a built-in name or a PNG/JPEG path."""
    import numpy as np

    if spec == "synthetic":
        w = width or SYNTHETIC_DEFAULT[0]
        h = height or SYNTHETIC_DEFAULT[1]
        return synthetic_image(w, h)
    from PIL import Image, UnidentifiedImageError

    path = BUILTIN.get(spec, Path(spec).expanduser())
    if not path.exists():
        raise ExperimentError(
            f"image '{spec}' not found (use 'synthetic', 'testcard' or a PNG/JPEG path)"
        )
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if width or height:
                im = im.resize((width or im.width, height or im.height), Image.Resampling.BICUBIC)
            arr = np.asarray(im, dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ExperimentError(f"image '{spec}' could not be read: {exc}") from None
    if arr.shape[0] < 8 or arr.shape[1] < 8:
        raise ExperimentError(f"image '{spec}' is {arr.shape[1]}x{arr.shape[0]}: too small")
    return np.ascontiguousarray(arr)


def to_display(planes, kind: str):
    """(3, H, W) float -> (H, W, 3) uint8 for PNG and the terminal."""
    import numpy as np

    img = np.moveaxis(np.asarray(planes, dtype=np.float32), 0, -1)
    if kind == "edge":
        mag = np.abs(img)
        scale = float(np.percentile(mag, 99.5)) or 1.0
        img = mag / scale
    return (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


# ---------------------------------------------------------------------------- CPU paths


def _sep_numpy(planes, w):
    """Separable correlation with clamped borders in NumPy (when SciPy is missing)."""
    import numpy as np

    r = (len(w) - 1) // 2
    acc_dtype = planes.dtype
    pad = np.pad(planes, ((0, 0), (0, 0), (r, r)), mode="edge")
    tmp = np.zeros_like(planes, dtype=acc_dtype)
    width = planes.shape[2]
    for k, wk in enumerate(w):
        tmp += wk * pad[:, :, k : k + width]
    pad = np.pad(tmp, ((0, 0), (r, r), (0, 0)), mode="edge")
    out = np.zeros_like(planes, dtype=acc_dtype)
    height = planes.shape[1]
    for k, wk in enumerate(w):
        out += wk * pad[:, k : k + height, :]
    return out


def _sep(planes, w, use_scipy: bool):
    if not use_scipy:
        return _sep_numpy(planes, w.astype(planes.dtype))
    from scipy import ndimage

    out = ndimage.correlate1d(planes, w.astype(planes.dtype), axis=2, mode="nearest")
    return ndimage.correlate1d(out, w.astype(planes.dtype), axis=1, mode="nearest")


def cpu_filter(planes, kind: str, radius: int, *, use_scipy: bool = True):
    """The filter on the CPU in planes' dtype (float64 planes give the reference)."""
    if kind in SEPARABLE:
        return _sep(planes, weights_1d(kind, radius), use_scipy)
    base = _sep(planes, weights_1d("gaussian" if kind == "sharpen" else "box", radius), use_scipy)
    return 2 * planes - base if kind == "sharpen" else planes - base


def max_abs_error(out, reference) -> float:
    """max |out - reference| in float64, one plane at a time; inf for any unwritten (NaN) pixel."""
    import numpy as np

    if out.shape != reference.shape:
        return float("inf")
    err = 0.0
    for c in range(out.shape[0]):
        plane = out[c]
        if not np.isfinite(plane).all():
            return float("inf")  # an unwritten (poisoned) pixel
        err = max(err, float(np.max(np.abs(plane.astype(np.float64) - reference[c]))))
    return err


SCIPY_MISSING = "SciPy is not installed (pip install scipy): NumPy slices ran instead"
NUMPY_INSTEAD = "SciPy ran instead (this is the fallback when SciPy is missing)"


def have_scipy() -> bool:
    try:
        import scipy.ndimage  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------- GPU kernel


class BlurKernel:
    """Our CuPy kernel, compiled once per (radius, tile) and cached for the process."""

    _modules: dict[tuple[int, int, int], Any] = {}

    def __init__(self, radius: int, tile: tuple[int, int] | None = None) -> None:
        import cupy

        self.cupy = cupy
        self.radius = radius
        self.tile = tile or tile_for(radius)
        key = (radius, *self.tile)
        if key not in BlurKernel._modules:
            opts = ("-std=c++17", f"-DR={radius}", f"-DTW={self.tile[0]}", f"-DTH={self.tile[1]}")
            BlurKernel._modules[key] = cupy.RawModule(code=KERNEL_PATH.read_text(), options=opts)
        self.module = BlurKernel._modules[key]

    def variant(self, kind: str, width: int) -> str:
        if kind not in SEPARABLE:
            return "blur_2d"
        return "blur_sep_v4" if width % 4 == 0 else "blur_sep"

    def launcher(self, src, dst, kind: str, variant: str | None = None):
        """A zero-argument callable that launches one filter pass (src, dst: (C, H, W) float32)."""
        cp = self.cupy
        channels, height, width = src.shape
        name = variant or self.variant(kind, width)
        w = weights_1d(kind, self.radius) if name != "blur_2d" else weights_2d(kind, self.radius)
        w_dev = cp.asarray(w.ravel())
        fn = self.module.get_function(name)
        grid = (-(-width // self.tile[0]), -(-height // self.tile[1]), channels)
        args = (src, dst, w_dev, cp.int32(width), cp.int32(height))

        def launch() -> None:
            fn(grid, (256,), args)

        return launch


# ---------------------------------------------------------------------------- experiment


class Blur(Experiment):
    id = "blur"
    title = "Blur and 2-D convolution"
    summary = "Gaussian, box, sharpen and edge filters: SciPy, torch conv2d and our CuPy kernel."
    lesson = "parallel-patterns"
    params = ParamSet(
        (
            Text(
                "image",
                "synthetic",
                "'synthetic', 'testcard' (built in) or a PNG/JPEG path",
                check=check_image,
                expects="'synthetic', 'testcard' or the path of a PNG or JPEG file",
            ),
            Int(
                "width",
                0,
                "pixels; 0 = 3840 for synthetic, the file's own width",
                min=0,
                max=7680,
                check=check_side,
            ),
            Int(
                "height",
                0,
                "pixels; 0 = 2160 for synthetic, the file's own height",
                min=0,
                max=4320,
                check=check_side,
            ),
            Choice("kernel", "gaussian", KERNELS, "the filter"),
            Int("radius", 2, "kernel radius: the kernel is 2r+1 pixels wide", min=1, max=15),
        )
    )
    contenders = (
        Contender("scipy", "SciPy ndimage (CPU)", "scipy", "NumPy slices run when it is missing"),
        Contender(
            "numpy-slices",
            "NumPy slices (CPU, without SciPy)",
            "numpy",
            "the CPU filter when SciPy is missing",
        ),
        Contender("torch", "torch conv2d depthwise (GPU)", "torch-cuda", "F.pad + F.conv2d"),
        Contender(
            "cupy-kernel", "our CuPy kernel (shared-memory tiles)", "cupy", "kernels/blur.cu"
        ),
        Contender(
            "torch-separable",
            "torch separable (two 1-D conv2d passes, GPU)",
            "torch-cuda",
            "a row pass then a column pass",
        ),
        Contender(
            "cupyx",
            "cupyx.scipy.ndimage (GPU)",
            "cupy",
            "gaussian_filter / uniform_filter, SciPy's API on the GPU",
        ),
    )
    bench_params = (
        {"image": "synthetic", "width": 3840, "height": 2160, "kernel": "gaussian", "radius": 2},
    )
    bench_suites = ("core", "full")

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        import numpy as np

        from gpulab.core import peaks as pk

        kind, radius = params["kernel"], int(params["radius"])
        result = self.new_result(ctx, params)
        use_scipy = have_scipy()
        if not use_scipy and "scipy" not in result.unavailable:  # found, but will not import
            result.unavailable["scipy"] = SCIPY_MISSING
            result.unavailable.pop("numpy-slices", None)
        todo = [c for c in self.contenders if c.id not in result.unavailable]
        ctx.progress(0.0, "loading the image")
        img = load_image(params["image"], int(params["width"]), int(params["height"]))
        height, width = img.shape[:2]
        size = f"{width}x{height}"
        # The decoded image is 12 bytes a pixel; the run needs several times that: refused
        # here, before the reference and the outputs are allocated.
        sup.require_host_fit(fit_bytes(width, height, host=True), f"blur of a {size} image")
        planes = np.ascontiguousarray(np.moveaxis(img, -1, 0))  # (3, H, W) float32
        del img
        nbytes = planes.nbytes
        gpu_todo = [c for c in todo if c.backend in ("torch-cuda", "cupy")]
        if gpu_todo:
            sup.require_fit(ctx, fit_bytes(width, height, host=False), f"blur of a {size} image")
        ctx.progress(0.05, "float64 reference")
        reference = cpu_filter(planes.astype(np.float64), kind, radius, use_scipy=use_scipy)
        gpu_peaks = pk.load_or_measure(ctx, quick=ctx.quick) if gpu_todo else None
        cpu_peaks = pk.load_or_measure(ctx, quick=ctx.quick, cpu=True)
        outputs: dict[str, Any] = {}
        times: dict[str, float] = {}
        work = 2 * nbytes  # the image read once and written once
        steps = len(todo) + 1
        for i, contender in enumerate(todo):
            ctx.progress(0.1 + 0.8 * i / steps, f"{contender.label}: {size} {kind} r={radius}")
            if contender.id in ("scipy", "numpy-slices"):
                out_holder: dict[str, Any] = {}

                def call(out_holder: dict[str, Any] = out_holder) -> None:
                    out_holder["out"] = cpu_filter(planes, kind, radius, use_scipy=use_scipy)

                timing = ctx.timer.measure(call)
                out = out_holder["out"]
                note = "" if use_scipy else "SciPy is not installed: NumPy slices ran"
                peak, peak_name = pk.peak_for(cpu_peaks, "copy"), "CPU memory copy"
                extra: dict[str, Any] = {"impl": "scipy.ndimage" if use_scipy else "numpy"}
            else:
                runner = {
                    "torch": self._run_torch,
                    "cupy-kernel": self._run_cupy,
                    "torch-separable": blur_library.run_torch_separable,
                    "cupyx": blur_library.run_cupyx,
                }[contender.id]
                try:
                    timing, out, extra = runner(ctx, planes, kind, radius)
                except ImportError as exc:  # cupyx.scipy's own imports: the row, not the run
                    result.unavailable[contender.id] = f"could not import: {exc}"
                    continue
                note, peak, peak_name = "", pk.peak_for(gpu_peaks, "copy"), "device copy"
            err = max_abs_error(out, reference)
            outputs[contender.id] = out
            times[contender.id] = timing.median_s
            m = row(
                contender.id,
                size,
                timing,
                work=work,
                unit="GB/s",
                scale=1e9,
                dtype="fp32",
                peak=peak,
                peak_name=peak_name,
                note=note,
                kernel=kind,
                radius=radius,
                max_abs_error=err,
                mpix_per_s=width * height / timing.median_s / 1e6,
                bytes_counted="image read once + written once",
                **extra,
            )
            ctx.measurement(m)
            result.measurements.append(m)
            result.verdicts.append(
                Verdict.check(
                    contender.id,
                    err,
                    TOLERANCE,
                    metric="max abs error",
                    reference="float64 CPU, clamped borders",
                    size=size,
                    dtype="fp32",
                )
            )
        ctx.progress(0.92, "saving the images")
        best = next(
            (c for c in ("cupy-kernel", "torch", "scipy", "numpy-slices") if c in outputs), None
        )
        self._save(ctx, result, planes, outputs.get(best), kind, best or "")
        result.summary = {
            "image": params["image"],
            "size": size,
            "kernel": kind,
            "radius": radius,
            "border": "clamp (nearest edge pixel)",
            "times_ms": {k: v * 1e3 for k, v in times.items()},
        }
        if "cupy-kernel" in times and "torch" in times:
            result.summary["kernel_vs_torch"] = times["torch"] / times["cupy-kernel"]
        if "cupy-kernel" in times and gpu_peaks and gpu_peaks.copy_gbs:
            gbs = work / times["cupy-kernel"] / 1e9
            result.summary["kernel_fraction_of_copy"] = gbs / gpu_peaks.copy_gbs
        result.explanation = (
            "A blur is a stencil: every output pixel reads a small neighbourhood. Our kernel "
            "stages a tile of the image plus its border in shared memory, so each pixel comes "
            "from DRAM about once, and for the separable kernels runs a row pass and then a "
            "column pass on that tile (2(2r+1) multiply-adds per pixel instead of (2r+1)^2). "
            "It is limited by memory bandwidth, which is why it is judged against a plain copy "
            "of the image. torch's depthwise conv2d needs a padded copy first and a general "
            "convolution algorithm after it. The library rows are what you would write "
            "without a kernel of your own: two 1-D torch passes, and cupyx.scipy.ndimage "
            "(SciPy's API on the GPU); each is judged against the same copy ceiling."
        )
        ctx.progress(1.0, "done")
        return self.finish(result)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _run_torch(ctx: Context, planes, kind: str, radius: int):
        import torch
        import torch.nn.functional as F

        dev = torch.device(ctx.torch_device)
        x = torch.from_numpy(planes).to(dev)[None]  # (1, 3, H, W)
        w = torch.from_numpy(weights_2d(kind, radius)).to(dev)
        w = w.expand(planes.shape[0], 1, *w.shape).contiguous()
        saved = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False  # fp32 means fp32: TF32 would miss 1e-5
        try:

            def call() -> Any:
                return F.conv2d(F.pad(x, (radius,) * 4, mode="replicate"), w, groups=x.shape[1])

            timing = ctx.timer.measure(call, sync="torch")
            out = call()[0].cpu().numpy()
        finally:
            torch.backends.cudnn.allow_tf32 = saved
        return timing, out, {"impl": "F.pad(replicate) + F.conv2d(groups=3)"}

    @staticmethod
    def _run_cupy(ctx: Context, planes, kind: str, radius: int):
        import cupy as cp

        with cp.cuda.Device(ctx.device_index):
            k = BlurKernel(radius)
            src = cp.asarray(planes)
            dst = cp.full_like(src, cp.nan)  # poisoned: an unwritten pixel fails the check
            launch = k.launcher(src, dst, kind)
            variant = k.variant(kind, planes.shape[2])
            launch()
            cp.cuda.Device().synchronize()
            out = cp.asnumpy(dst)
            timing = ctx.timer.measure(launch, sync="cupy")
            # The same-run ceiling for this exact image: a plain device copy of it.
            copy_t = ctx.timer.measure(lambda: cp.copyto(dst, src), sync="cupy", cold=False)
        return (
            timing,
            out,
            {
                "impl": variant,
                "tile": list(k.tile),
                "image_copy_ms": copy_t.median_s * 1e3,
                "fraction_of_image_copy": copy_t.median_s / timing.median_s,
            },
        )

    @staticmethod
    def _save(ctx: Context, result: Result, planes, out, kind: str, who: str) -> None:
        from PIL import Image

        from gpulab.core.peaks import data_dir

        if out is None:
            return
        run_dir = data_dir() / "runs" / f"blur-{time.strftime('%Y%m%d-%H%M%S')}-{id(result):x}"
        before = run_dir / "input.png"
        after = run_dir / "output.png"
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            Image.fromarray(to_display(planes, "")).save(before, compress_level=1)
            Image.fromarray(to_display(out, kind)).save(after, compress_level=1)
        except OSError as exc:  # a full or read-only data dir costs the pictures, not the run
            ctx.log(f"could not save the images in {run_dir}: {exc.strerror or exc}")
            return
        h, w = planes.shape[1:]
        meta = {"width": w, "height": h, "role": "before"}
        result.artifacts.append(Artifact("input image", "image", str(before), meta=meta))
        meta = {"width": w, "height": h, "role": "after", "kernel": kind, "contender": who}
        result.artifacts.append(Artifact(f"{kind} result", "image", str(after), meta=meta))
        ctx.log(f"saved {after}")

    def availability(self, inventory: Any) -> dict[str, str]:
        """One CPU contender runs, and its row names it: SciPy when it is installed, else the
        NumPy fallback (a row labelled SciPy must never be NumPy's). Checked without importing
        SciPy, so the UI process can ask; `run` confirms with a real import."""
        import importlib.util

        out = super().availability(inventory)
        if importlib.util.find_spec("scipy") is not None:
            out["numpy-slices"] = NUMPY_INSTEAD
        else:
            out["scipy"] = SCIPY_MISSING
        return out


EXPERIMENT = Blur()
