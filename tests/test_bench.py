"""`gpulab bench` on the CPU with tiny params: JSON and Markdown written, comparisons present."""

from __future__ import annotations

import argparse
import json

from gpulab import bench


def test_quick_bench_writes_json_and_markdown(tmp_path):
    args = argparse.Namespace(
        suite="core",
        json_path=str(tmp_path / "b.json"),
        md_path=str(tmp_path / "b.md"),
        only=[],
        quick=True,
    )
    assert bench.main(args) == 0
    report = json.loads((tmp_path / "b.json").read_text())
    assert {r["experiment"] for r in report["runs"]} == {"montecarlo", "blur", "matmul"}
    assert all(r["status"] == "result" for r in report["runs"])
    assert all(r["result"]["verdicts"] for r in report["runs"])
    assert report["peaks"]["copy_gbs"] > 0
    names = [c["name"] for c in report["comparisons"]]
    assert any(n.startswith("montecarlo") for n in names)
    assert any(n.startswith("blur") for n in names)
    assert any(n.startswith("matmul") for n in names)
    # Without a GPU, the GPU targets are reported as not run, never as passed.
    if "GPU" not in report["device"] and report["peaks"]["cpu"]:
        gpu_targets = [c for c in report["comparisons"] if "cupy" in c["name"]]
        assert all(c["status"] == "not run" for c in gpu_targets)
    md = (tmp_path / "b.md").read_text()
    assert "## Targets (same run)" in md and "| numpy |" in md


def test_unknown_suite_and_only_are_refused(tmp_path, capsys):
    args = argparse.Namespace(suite="nope", json_path=None, md_path=None, only=[])
    assert bench.main(args) == 2
    args = argparse.Namespace(suite="core", json_path=None, md_path=None, only=["nope"])
    assert bench.main(args) == 2
    assert "nope" in capsys.readouterr().err


def test_device_slug():
    assert bench.device_slug("NVIDIA H100 80GB HBM3", False) == "h100"
    assert bench.device_slug("NVIDIA H200", False) == "h200"
    assert bench.device_slug("anything", True) == "cpu"


def test_comparisons_compute_ratios():
    from gpulab.core.devices import Inventory
    from gpulab.core.peaks import Peaks

    def mc(samples, fused, torch, fb, tb):
        rows = [
            {"contender": "cupy-fused", "throughput": fused, "extra": {"device_bytes": fb}},
            {"contender": "torch", "throughput": torch, "extra": {"device_bytes": tb}},
        ]
        return {
            "experiment": "montecarlo",
            "status": "result",
            "params": {"samples": samples},
            "result": {"summary": {"samples": samples}, "measurements": rows},
        }

    blur_run = {
        "experiment": "blur",
        "status": "result",
        "params": {},
        "result": {
            "summary": {"kernel_vs_torch": 4.0, "times_ms": {}, "size": "x"},
            "measurements": [{"contender": "cupy-kernel", "throughput": 1500.0}],
        },
    }
    peaks = Peaks(key="k", device="d", cpu=False, copy_gbs=3000.0)
    out = bench.comparisons(
        [mc(1e9, 700.0, 50.0, 8, 100), mc(1e11, 720.0, 52.0, 8, 100), blur_run],
        peaks,
        Inventory(),
        quick=False,
    )
    by = {c["name"]: c for c in out}
    assert by["montecarlo: cupy-fused G samples/s"]["status"] == "pass"
    assert abs(by["montecarlo: cupy-fused / torch recipe"]["value"] - 720 / 52) < 1e-9
    assert by["montecarlo: torch device memory, largest / smallest samples"]["status"] == "pass"
    assert by["blur: our kernel GB/s / device copy GB/s"]["value"] == 0.5
    assert by["blur: our kernel speedup over torch conv2d"]["status"] == "pass"
