"""The explain card of the experiments' own kernels (blur, reduction, the fused Monte Carlo), with
NVRTC and no GPU: each compiles as its experiment compiles it, is launched as its experiment
launches it, and names the plausible finding; the command and the lessons show it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gpulab.core import nvrtc
from gpulab.core.errors import BadInput
from gpulab.experiments import blur_kernel
from gpulab.explain.experiment_kernels import (
    EXPERIMENTS,
    NoKernel,
    Work,
    explain_experiment,
    kernel_line,
    plan,
    roofline_finding,
)

ROOT = Path(__file__).resolve().parents[1]
needs_nvrtc = pytest.mark.skipif(nvrtc.library() is None, reason="needs NVRTC (nvidia-cuda-nvrtc)")


def _kinds(report):
    return {f.kind: f for f in report.findings}


@needs_nvrtc
def test_blur_card_names_the_register_limited_tile():
    e = explain_experiment("blur")
    assert e.arch == "sm_90" and e.figure is not None
    assert e.figure.data["bound"] == "memory" and e.figure.data["intensity_flop_per_byte"] == 2.5
    (k,) = e.kernels
    assert not k.error and k.name == "blur_sep_reg"
    # 6 blocks an SM by __launch_bounds__: 48 of 64 warps, limited by registers, and not a
    # suspect: by Little's law its 40 bytes of loads a thread put 60 KB in flight an SM, four
    # times what the SM needs (the tile the experiment tuned: six blocks an SM beat five).
    occ = _kinds(k)["occupancy"]
    assert occ.data["limiter"] == "registers" and k.occupancy["warps_per_sm"] == 48
    assert occ.severity == 0 and "in flight" in occ.verdict, occ.card_line()
    assert occ.data["in_flight"]["have_per_sm"] > 2 * occ.data["in_flight"]["need_per_sm"]
    assert k.top is None, k.ranked()
    assert _kinds(k)["vector-loads"].verdict == "vector loads"
    assert tuple(k.launch["grid"]) == (30, 68, 3)  # 3840x2160 in 128x32 tiles, 3 planes
    assert k.resources["shared_static"] > 16 * 1024  # the staged tile and its halo


@needs_nvrtc
def test_blur_edge_filter_is_bound_by_shared_loads():
    e = explain_experiment("blur", {"kernel": "edge", "radius": "2"})
    (k,) = e.kernels
    assert k.name == "blur_2d"
    assert k.top is not None and k.top.kind == "shared-bound"
    assert _kinds(k)["vector-loads"].verdict == "no 128-bit loads"
    assert e.figure is not None and e.figure.data["flops_per_element"] == 50  # 25 taps


@needs_nvrtc
def test_reduction_card_is_a_clean_streaming_kernel():
    e = explain_experiment("reduction")
    (k,) = e.kernels
    assert not k.error and k.name == "reduce_sum_f32"
    assert e.figure is not None and e.figure.data["bound"] == "memory"
    assert e.figure.value == "AI 0.25 FLOP/B"
    found = _kinds(k)
    assert found["occupancy"].verdict == "full"
    assert found["vector-loads"].verdict == "vector loads"
    assert found["global-atomics"].verdict == "not per element"
    assert k.top is None  # nothing stands out: the lesson's point
    # min(4096, 132 SMs x 4) blocks of 512 for 100M values: one whole wave
    assert tuple(k.launch["grid"]) == (528,) and tuple(k.launch["block"]) == (512,)


@needs_nvrtc
def test_reduction_small_input_leaves_sms_idle():
    e = explain_experiment("reduction", {"n": "1e6"})
    (k,) = e.kernels
    assert tuple(k.launch["grid"]) == (489,)  # ceil(250000 / 512)
    (grid,) = [f for f in k.findings if f.what == "grid"]
    assert grid.value.startswith("0.93 waves") and grid.severity == 0


@needs_nvrtc
def test_montecarlo_card_is_compute_bound():
    e = explain_experiment("montecarlo")
    (k,) = e.kernels
    assert not k.error and k.name == "mc_pi"
    assert e.figure is not None and e.figure.data["bound"] == "compute"
    assert e.figure.value == "no DRAM bytes" and "samples/s" in e.figure.advice
    found = _kinds(k)
    assert found["occupancy"].verdict == "full"
    assert found["global-atomics"].verdict == "not per element"
    assert k.resources["local_bytes"] == 0 and k.resources.get("spill_stores", 0) == 0
    # the experiment's grid: 8 blocks of 256 an SM (registers allow it) on 132 SMs
    assert tuple(k.launch["grid"]) == (132 * 8,)


@needs_nvrtc
def test_card_lines_point_into_the_cu_file():
    for name in EXPERIMENTS:
        e = explain_experiment(name, arch="sm_80")
        (k,) = e.kernels
        code = plan(name, {"kernel": "gaussian", "radius": 2, "width": 0, "height": 0, "n": 10**8,
                           "samples": 10**7}, 108).path.read_text()  # fmt: skip
        assert f"{k.name}(" in code.splitlines()[k.line - 1].replace(" ", "")
        assert e.arch == "sm_80" and "A100" in e.device
        assert len(max(e.card(), key=len)) <= 80


def test_roofline_finding_uses_the_calibration_when_given():
    w = Work(1, 4, "one add; 4 bytes read", "value")
    est = roofline_finding(w, "sm_90")
    assert est.data["ceilings"] == "datasheet" and "estimated" in est.detail
    assert math.isclose(est.data["ridge_flop_per_byte"], 66.9e12 / 3350e9)
    cal = roofline_finding(w, "sm_90", bandwidth_gbs=3000.0, compute_tflops=51.0)
    assert cal.data["ceilings"] == "calibrated" and cal.data["ridge_flop_per_byte"] == 17.0
    dense = roofline_finding(Work(2 * 4096, 12, "a matmul-like kernel", "output"), "sm_90")
    assert dense.data["bound"] == "compute"


def test_blur_variant_matches_the_experiment_kernel():
    for kind, radius, width in (("gaussian", 2, 3840), ("box", 7, 3840), ("edge", 2, 3840),
                                ("gaussian", 2, 3841)):  # fmt: skip
        assert plan("blur", {"kernel": kind, "radius": radius, "width": width, "height": 0},
                    132).kernel == blur_kernel.variant_for(kind, radius, width)  # fmt: skip
    assert blur_kernel.variant_for("gaussian", 2, 3841) == "blur_sep"
    assert blur_kernel.variant_for("box", 7, 3840) == "blur_sep_v4"


def test_an_experiment_without_a_kernel_is_one_line_of_bad_input():
    with pytest.raises(NoKernel, match="no CUDA kernel of its own") as info:
        explain_experiment("vector-add")
    assert isinstance(info.value, BadInput)
    assert kernel_line('int x;\nextern "C" __global__ void k(int a) {}', "k") == 2


@needs_nvrtc
def test_cli_explain_experiment(capsys):
    from gpulab.cli import main

    assert main(["ex", "explain", "--experiment", "montecarlo"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("explain experiment montecarlo: sm_90")
    assert "compute-bound" in out[1] and out[2].startswith("kernel mc_pi")
    assert main(["ex", "explain", "--experiment", "reduction", "--set", "n=1e6", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["explain"]
    assert data["file"].endswith("kernels/reduction.cu") and data["figure"]["kind"] == "roofline"
    assert data["kernels"][0]["launch"]["grid"] == [489]
    for argv, says in (
        (["--experiment", "matmul"], "no CUDA kernel of its own"),
        (["--experiment", "no-such"], "no-such"),
        (["--experiment", "blur", "--set", "radius=99"], "radius"),
        (["--experiment", "blur", "--set", "radius"], "NAME=VALUE"),
        (["--experiment", "blur", "--ncu"], "static card only"),
        (["map-2d", "--experiment", "blur"], "not both"),
        ([], "--experiment ID"),
    ):
        assert main(["ex", "explain", *argv]) == 2, argv
        assert says in capsys.readouterr().err, argv


def test_lessons_show_the_experiment_cards():
    content = ROOT / "gpulab" / "lessons" / "content"
    for lesson, name in (("08-parallel-patterns.md", "reduction"),
                         ("17-applications.md", "montecarlo")):  # fmt: skip
        text = (content / lesson).read_text()
        assert f"--experiment {name}" in text or "explain_experiment" in text
    assert "explain_experiment(name)" in (content / "08-parallel-patterns.md").read_text()
