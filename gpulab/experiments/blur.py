"""Blur (2-D convolution): SciPy on the CPU, torch conv2d on the GPU, and our own CuPy kernel.

Images are float32 in [0, 1], planar (3 planes of H x W). The kernels, their weights and the
CPU reference are in blur_filters.py; images in blur_images.py; our kernel in blur_kernel.py;
the library contenders (cupyx, separable torch) in blur_library.py. This module is the run.
Border mode everywhere: clamp (an outside pixel takes the nearest edge pixel): scipy
mode="nearest", torch F.pad(mode="replicate"), clamped indices in kernels/blur.cu.

Verification: max abs error against a float64 CPU reference <= 1e-5. The reference uses the same
float32-rounded weights; sharpen and edge are computed through their identities (2x - gaussian,
x - box), which equal the 2-D stencil in exact arithmetic and cost a separable pass, not (2r+1)^2.
"""

from __future__ import annotations

import importlib.util
import time
from typing import Any

from gpulab.core import peaks as pk
from gpulab.core.params import Choice, Int, ParamSet, Text
from gpulab.core.peaks import data_dir
from gpulab.core.results import Artifact, Result, Verdict
from gpulab.experiments import backends, blur_library, fits
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.blur_filters import (
    KERNELS,
    NUMPY_INSTEAD,
    SCIPY_MISSING,
    cpu_filter,
    have_scipy,
    max_abs_error,
    weights_2d,
)
from gpulab.experiments.blur_images import check_image, check_side, load_image, to_display
from gpulab.experiments.blur_kernel import BlurKernel
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import GPU_BACKENDS, backend, duration, label, measured, rate

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
        return int(HOST_BYTES_PER_VALUE * values * 1.05) + fits.HOST_SLACK_BYTES
    return int(DEVICE_IMAGES * 4 * values * 1.05) + fits.SLACK_BYTES


# ---------------------------------------------------------------------------- experiment


class Blur(Experiment):
    """The `blur` experiment: Gaussian, box, sharpen and edge filters: SciPy, torch conv2d and
    our CuPy kernel."""

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
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import numpy as np

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
        fits.require_host_fit(fit_bytes(width, height, host=True), f"blur of a {size} image")
        planes = np.ascontiguousarray(np.moveaxis(img, -1, 0))  # (3, H, W) float32
        del img
        nbytes = planes.nbytes
        gpu_todo = [c for c in todo if c.backend in ("torch-cuda", "cupy")]
        if gpu_todo:
            fits.require_fit(ctx, fit_bytes(width, height, host=False), f"blur of a {size} image")
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
        self._save(
            ctx, result, planes, outputs.get(best) if best is not None else None, kind, best or ""
        )
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
            "of the image. Every GPU row is timed back to back, like the calibration's copy, so "
            "the host's launch latency is in none of them (our kernel's row keeps a lone call's "
            "time beside it, single_call_ms). torch's depthwise conv2d needs a padded copy "
            "first and a general convolution algorithm after it. The library rows are what you would write "
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

            out = call()[0].cpu().numpy()
            timing, kw = backends.sustained_timing(ctx, call, "torch-cuda")
        finally:
            torch.backends.cudnn.allow_tf32 = saved
        return (
            timing,
            out,
            {"impl": "F.pad(replicate) + F.conv2d(groups=3)", "regime": backends.regime(kw)},
        )

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
            timing, kw = backends.sustained_timing(ctx, launch, "cupy")
            # One launch at a time: what the host's launch latency adds to a lone call.
            single = ctx.timer.measure(launch, sync="cupy", cold=False)

            def copy() -> None:
                cp.copyto(dst, src)

            # The same-run ceiling for this exact image: a plain device copy of it, timed alike.
            copy_t, _ = backends.sustained_timing(ctx, copy, "cupy")
        return (
            timing,
            out,
            {
                "impl": variant,
                "tile": list(k.tile),
                "regime": backends.regime(kw),
                "single_call_ms": single.median_s * 1e3,
                "image_copy_ms": copy_t.median_s * 1e3,
                "fraction_of_image_copy": copy_t.median_s / timing.median_s,
            },
        )

    @staticmethod
    def _save(ctx: Context, result: Result, planes, out, kind: str, who: str) -> None:
        from PIL import Image

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
        out = super().availability(inventory)
        if importlib.util.find_spec("scipy") is not None:
            out["numpy-slices"] = NUMPY_INSTEAD
        else:
            out["scipy"] = SCIPY_MISSING
        return out

    def headline(self, result: Result) -> str:
        """One line: the fastest blur's rate and its percent of this device's copy bandwidth."""
        rows = measured(result)
        best = next(
            (m for cid in ("cupy-kernel", "torch", "scipy") for m in rows if m.contender == cid),
            None,
        )
        if best is None:
            return ""
        where = "GPU" if backend(self, best.contender) in GPU_BACKENDS else "CPU"
        if best.percent_of_peak is not None:
            return (
                f"your blur ({label(self, best.contender)}) ran at {best.percent_of_peak:.0f}% of "
                f"this {where}'s copy bandwidth ({rate(best)}, {best.size} in "
                f"{duration(best.time_median_s)})"
            )
        return (
            f"{label(self, best.contender)} blurred {best.size} in {duration(best.time_median_s)}"
        )


EXPERIMENT = Blur()
