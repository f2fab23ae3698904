"""The explain card for the experiments' own CUDA kernels (blur, reduction, the fused Monte Carlo).

`gpulab ex explain --experiment ID [--set NAME=VALUE ...]` compiles the `.cu` file the experiment
launches (gpulab/experiments/kernels/) with the options the experiment compiles it with, lays the
launch the experiment would make at those parameters (its defaults unless `--set`), and gives the
same Tier 0 card as a learner's file: resources, occupancy, waves, loads, coalescing, barriers.

The card's first line places the kernel's work on the roofline: FLOPs and DRAM bytes per element
as the experiment counts them, against this GPU's calibrated copy and fp32 matmul ceilings when
the calibration cache has them (`measured`), else the datasheet figures of the architecture's
usual card (`estimated`). Nothing here runs a kernel: no figure of the experiment is shown.
Imports neither torch nor CuPy nor textual.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.core import nvrtc
from gpulab.core.errors import BadInput
from gpulab.experiments import blur_kernel, montecarlo_counts
from gpulab.experiments import reduction as reduction_mod
from gpulab.experiments.blur_filters import SEPARABLE
from gpulab.experiments.registry import get as get_experiment
from gpulab.explain import arch as arches
from gpulab.explain import cubin
from gpulab.explain.explainer import device_for, kernel_report
from gpulab.explain.findings import Explanation, Finding
from gpulab.explain.source import KernelSource, LaunchSite

EXPERIMENTS = ("blur", "reduction", "montecarlo")


class NoKernel(BadInput, ValueError):
    """The experiment has no CUDA kernel of its own to explain."""


@dataclass(frozen=True)
class Work:
    """What one element of the experiment costs: FLOPs, DRAM bytes, and what is counted."""

    flops: float
    bytes: float
    counted: str
    element: str  # pixel, value, sample


@dataclass(frozen=True)
class Plan:
    """One experiment kernel as the experiment compiles and launches it."""

    path: Path
    kernel: str
    options: tuple[str, ...]
    block: tuple[int, ...]
    grid: tuple[int, ...]
    work: Work
    size: str  # the problem, in words


def _blur(params: Mapping[str, Any], sms: int) -> Plan:
    kind, radius = str(params["kernel"]), int(params["radius"])
    width = int(params["width"]) or 3840
    height = int(params["height"]) or 2160
    name = blur_kernel.variant_for(kind, radius, width)
    tile = blur_kernel.tile_for(radius, name)
    reg = tuple(tile) == blur_kernel.REG_TILE
    options = (
        "-std=c++17",
        f"-DR={radius}",
        f"-DTW={tile[0]}",
        f"-DTH={tile[1]}",
        f"-DMINB={blur_kernel.REG_MIN_BLOCKS if reg else 1}",
    )
    taps = 2 * (2 * radius + 1) if kind in SEPARABLE else (2 * radius + 1) ** 2
    work = Work(
        2 * taps,
        8,
        f"{taps} multiply-adds a pixel ({'a row and a column pass' if kind in SEPARABLE else 'every tap'});"
        " 4 bytes read + 4 written (the halo re-read from L2, not DRAM)",
        "pixel",
    )
    grid = (-(-width // tile[0]), -(-height // tile[1]), 3)
    size = f"{width}x{height} RGB float32, {kind} r={radius} ({name}, {tile[0]}x{tile[1]} tiles)"
    return Plan(blur_kernel.KERNEL_PATH, name, options, (256,), grid, work, size)


def _reduction(params: Mapping[str, Any], sms: int) -> Plan:
    n = int(params["n"])
    r = reduction_mod
    most = min(r.MAX_BLOCKS, sms * r.BLOCKS_PER_SM)
    blocks = max(1, min(most, -(-max(n // 4, 1) // r.THREADS)))
    work = Work(1, 4, "one add a value; 4 bytes read (one double a block written)", "value")
    size = f"{n:,} float32 values"
    return Plan(r.KERNEL_FILE, "reduce_sum_f32", (), (r.THREADS,), (blocks,), work, size)


def _montecarlo(params: Mapping[str, Any], sms: int, regs: int = 32) -> Plan:
    samples = int(params["samples"])
    # The experiment's FusedKernel.grid: blocks for full occupancy at the kernel's registers.
    per_sm = max(1, min(8, 65536 // (max(1, regs) * 256)))
    blocks = min(sms * per_sm, -(-samples // 256))
    blocks = max(1, blocks, -(-samples // (256 * 2**31)))
    work = Work(
        3,
        0,
        "a multiply and an FMA (3 FLOPs) after a 64-bit integer hash a sample; no DRAM bytes"
        " (one 8-byte atomic a warp)",
        "sample",
    )
    size = f"{samples:,} samples"
    return Plan(
        montecarlo_counts.KERNEL_PATH, "mc_pi", ("-std=c++17",), (256,), (blocks,), work, size
    )


def plan(experiment: str, params: Mapping[str, Any], sms: int, regs: int = 32) -> Plan:
    """The kernel `experiment` launches at `params` (already validated) on a GPU of `sms` SMs."""
    if experiment == "blur":
        return _blur(params, sms)
    if experiment == "reduction":
        return _reduction(params, sms)
    if experiment == "montecarlo":
        return _montecarlo(params, sms, regs)
    raise NoKernel(
        f"experiment {experiment!r} has no CUDA kernel of its own to explain"
        f" (those that do: {', '.join(EXPERIMENTS)})"
    )


def roofline_finding(
    work: Work,
    arch: str,
    bandwidth_gbs: float | None = None,
    compute_tflops: float | None = None,
    card: str = "",
) -> Finding:
    """The experiment's work on the roofline: memory- or compute-bound, and what to compare it
    with. Measured ceilings when given (the calibration), else the datasheet's (estimated)."""
    measured = bool(bandwidth_gbs and compute_tflops)
    if measured:
        bw, fl = float(bandwidth_gbs or 0), float(compute_tflops or 0)
        roof = f"this GPU's calibrated copy {bw:,.0f} GB/s and fp32 matmul {fl:.1f} TFLOP/s"
    else:
        card_arch = arches.get(arch if arch in arches.ARCHS else None)
        bw, fl = card_arch.bandwidth_gbs, card_arch.fp32_tflops
        roof = f"the datasheet's {bw:,.0f} GB/s and {fl:.1f} FP32 TFLOP/s of {card or arch}"
    ridge = fl * 1e12 / (bw * 1e9)
    ai = work.flops / work.bytes if work.bytes else math.inf
    memory = ai < ridge
    ai_text = "no DRAM bytes" if not work.bytes else f"AI {ai:.3g} FLOP/B"
    if memory:
        verdict = f"< ridge {ridge:.3g}: memory-bound"
        advice = "GB/s vs the copy"
    else:
        verdict = f">= ridge {ridge:.3g}: compute-bound" if work.bytes else "compute-bound"
        advice = f"count {work.element}s/s, not GB/s"
    return Finding(
        kind="roofline",
        what="roofline",
        value=ai_text,
        verdict=verdict,
        advice=advice,
        tag="estimated",
        detail=(
            f"Per {work.element}: {work.counted}. Ridge {ridge:.3g} FLOP/B from {roof}"
            + ("" if measured else " (estimated: no calibration on this machine)")
            + ". No figure: this card does not run the kernel."
        ),
        data={
            "flops_per_element": work.flops,
            "bytes_per_element": work.bytes,
            "intensity_flop_per_byte": ai if math.isfinite(ai) else None,
            "ridge_flop_per_byte": ridge,
            "bound": "memory" if memory else "compute",
            "bandwidth_gbs": bw,
            "compute_tflops": fl,
            "ceilings": "calibrated" if measured else "datasheet",
        },
    )


def explain_experiment(
    experiment: str,
    params: Mapping[str, str] | None = None,
    *,
    arch: str | None = None,
    sms: int | None = None,
    card: str | None = None,
    bandwidth_gbs: float | None = None,
    compute_tflops: float | None = None,
) -> Explanation:
    """The Tier 0 card of `experiment`'s own kernel at `params` (strings, as `--set` gives them;
    the experiment's defaults for the rest). Raises NoKernel for an experiment without one and
    the experiment's ParamError / UnknownExperiment for bad input."""
    t0 = time.perf_counter()
    exp = get_experiment(experiment)
    if exp.id not in EXPERIMENTS:
        plan(exp.id, {}, 0)  # raises NoKernel with the list
    values = exp.params.validate(params or {})
    dev = device_for(arch, sms, card)
    first = plan(exp.id, values, dev.sms)
    code = first.path.read_text(encoding="utf-8")
    where = (
        f"{dev.name}, {dev.sms} SMs"
        if dev.sms_source == "measured"
        else f"{dev.name} ({dev.sms} SMs)"
    )
    out = Explanation(
        f"experiment {exp.id}",
        f"gpulab/experiments/kernels/{first.path.name}",
        dev.arch.name,
        where,
    )
    try:
        comp = nvrtc.compile_source(code, dev.arch.name, first.options)
    except nvrtc.NvrtcMissing as exc:
        out.notes.append(str(exc))
        out.seconds = time.perf_counter() - t0
        return out
    p = first
    if exp.id == "montecarlo" and comp.ok:
        # The experiment sizes its grid from the compiled kernel's registers.
        with_regs = cubin.read(comp.cubin).get(first.kernel)
        if with_regs is not None:
            p = plan(exp.id, values, dev.sms, with_regs.registers)
    ks = KernelSource(
        p.kernel, code, p.options, "RawModule", kernel_line(code, p.kernel), 1, variable=exp.id
    )
    site = LaunchSite(p.kernel, p.grid, p.block, 0, 0, str(p.grid), str(p.block))
    out.kernels.append(kernel_report(ks, comp, dev, [site], None, None, None))
    out.figure = roofline_finding(
        p.work, dev.arch.name, bandwidth_gbs, compute_tflops, card=dev.name
    )
    out.notes.append(f"the launch {exp.id} makes for {p.size}: grid {p.grid}, block {p.block}")
    out.seconds = time.perf_counter() - t0
    return out


def kernel_line(code: str, name: str) -> int:
    """The line of the .cu file where kernel `name` is defined (1 when not found)."""
    m = re.search(rf"\b{re.escape(name)}\s*\(", code)
    return code.count("\n", 0, m.start()) + 1 if m else 1
