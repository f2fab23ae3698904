"""Chapters 20 (warp-level primitives) and 24 (numerics and determinism): lessons, exercises and
experiments linked both ways; the experiments' kernels on the CPU emulator; the numerics CPU path;
the bench targets; and, with -m gpu, both experiments on a real GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpulab.benchmark import targets as bench_targets
from gpulab.core.devices import detect
from gpulab.emulator import cuda, cupy_module, toolchain
from gpulab.exercises.loader import load_catalog
from gpulab.experiments import numerics, registry, warp_shuffle
from gpulab.experiments.inline import run_job
from gpulab.lessons.catalog import default_catalog

CHAPTERS = {
    "warp-primitives": ("warp-shuffle", "warp-argmax"),
    "numerics": ("numerics", "deterministic-sum"),
}
emulated = pytest.mark.skipif(toolchain.compiler() is None, reason="no host C++ compiler")


@pytest.mark.parametrize("lesson_id", sorted(CHAPTERS))
def test_lesson_experiment_and_exercise_link_each_other(lesson_id: str) -> None:
    exp_id, ex_id = CHAPTERS[lesson_id]
    lesson = default_catalog().get(lesson_id)
    assert exp_id in lesson.experiments
    assert exp_id in {link.experiment for link in lesson.links()}
    assert ex_id in {link.exercise for link in lesson.exercise_links()}
    assert registry.get(exp_id).lesson == lesson_id
    exercises = {ex.id: ex for ex in load_catalog()}
    assert exercises[ex_id].lesson == lesson_id
    assert lesson.chapter in (20, 24) and lesson.chapter_title != f"Chapter {lesson.chapter}"


def test_both_experiments_are_registered_with_bench_params() -> None:
    for exp in (warp_shuffle.EXPERIMENT, numerics.EXPERIMENT):
        assert exp.id in registry.all_experiments()
        assert "full" in exp.bench_suites and exp.bench_params
        for bp in exp.bench_params:
            exp.params.validate(bp)


def test_warp_shuffle_refuses_in_one_line_without_cupy() -> None:
    events: list[dict] = []
    inv = detect()
    if inv.available("cupy"):
        pytest.skip("CuPy sees a GPU here: the GPU test runs the experiment")
    assert run_job("t", "warp-shuffle", {"n": 4096}, inv, events.append, quick=True) == "failed"
    assert "needs an NVIDIA GPU with CuPy" in events[-1]["message"]
    assert "\n" not in events[-1]["message"]


@emulated
@pytest.mark.parametrize("cid", sorted(warp_shuffle.KERNELS))
@pytest.mark.parametrize("per", [1, 3])
def test_warp_shuffle_kernels_sum_every_element_once(cid: str, per: int) -> None:
    cp = cupy_module.make()
    n = 5000
    x = cp.asarray(np.arange(n, dtype=np.float32) % 7 + 1)
    blocks = warp_shuffle.blocks_for(n, per)
    partial = cp.full(blocks, np.nan, dtype=np.float32)
    src, name = warp_shuffle.KERNELS[cid]
    cp.RawKernel(src, name)((blocks,), (warp_shuffle.THREADS,), (x, partial, np.int64(n)))
    assert float(partial.astype(np.float64).sum()) == float(x.astype(np.float64).sum())
    assert cuda.static_shared_bytes(src, name) == (1024 if cid == "shared-tree" else 32)


def test_warp_shuffle_tolerance_grows_with_the_work_per_thread() -> None:
    assert warp_shuffle.tolerance(1 << 26, 1) < warp_shuffle.tolerance(1 << 26, 64) < 1e-5


@emulated
def test_numerics_atomic_sum_moves_with_block_order_and_the_fixed_order_does_not() -> None:
    cp = cupy_module.make()
    mod = cp.RawModule(code=numerics.SUMS)
    rng = np.random.default_rng(1)
    n, blocks = 40_000, 40
    x = cp.asarray((rng.standard_normal(n) * 10 + 0.5).astype(np.float32))
    out = cp.zeros(1, dtype=np.float32)
    partial = cp.empty(blocks, dtype=np.float32)
    atomic, parts = mod.get_function("atomic_sum"), mod.get_function("partial_sums")
    seen: dict[str, set[bytes]] = {"atomic": set(), "fixed": set()}
    with cuda.shuffled_blocks(seed=4):
        for _ in range(6):
            out[...] = 0
            atomic((blocks,), (256,), (x, out, np.int64(n)))
            seen["atomic"].add(out.tobytes())
            parts((blocks,), (256,), (x, partial, np.int64(n)))
            parts((1,), (256,), (partial, out, np.int64(blocks)))
            seen["fixed"].add(out.tobytes())
            exact = float(x.astype(np.float64).sum())
            assert abs(float(out[0]) - exact) < 1e-5 * float(np.abs(x).sum())
    assert len(seen["atomic"]) > 1 and len(seen["fixed"]) == 1


def test_numerics_cpu_path_measures_fp16_growth_and_matmul_error(cpu_inventory) -> None:
    events: list[dict] = []
    params = {"acc_max": 1 << 16, "cpu_size": 64}
    assert run_job("t", "numerics", params, cpu_inventory, events.append, quick=True) == "result"
    result = events[-1]["result"]
    s = result["summary"]
    fp16, fp32 = s["running_error"]["fp16-running"], s["running_error"]["fp32-running"]
    assert fp16[str(1 << 16)] > 0.5  # stalled near 2048 while the exact sum is ~32768
    assert fp16["1024"] < 0.05 and max(fp32.values()) < 1e-5
    errs = s["matmul_error"]
    assert errs["fp32-cpu"] < 1e-5 < errs["bf16-cpu"] < 1e-1
    for v in result["verdicts"]:
        assert v["passed"], v
    for c in numerics.EXPERIMENT.contenders:
        if c.backend in ("cupy", "torch-cuda"):
            assert result["unavailable"].get(c.id), c.id
    assert f"off by {fp16[str(1 << 16)]:.0%}" in result["headline"]
    notes = [m["note"] for m in result["measurements"] if m["contender"] == "fp16-running"]
    assert all("relative error" in n for n in notes) and len(notes) == 3


def _run(exp: str, summary: dict) -> dict:
    return {"experiment": exp, "status": "result", "result": {"summary": summary}}


def test_bench_targets_for_both_experiments() -> None:
    runs = [
        _run(
            "warp-shuffle",
            {
                "shuffle_vs_tree": {"1": 1.3, "32": 1.0},
                "shuffle_of_copy": {"1": 0.5, "32": 0.66},
                "gbs": {},
            },
        ),
        _run("numerics", {"runs": 10, "fixed-order_distinct": 1, "fixed_vs_atomic_time": 1.4}),
    ]
    by = {c["name"]: c for c in bench_targets.syllabus_comparisons(runs)}
    tree = by["warp-shuffle: shuffle GB/s / shared-tree GB/s at 1 element(s) per thread"]
    assert tree["status"] == "pass" and tree["value"] == 1.3
    copy = by["warp-shuffle: shuffle GB/s at 32 per thread / device copy GB/s"]
    assert copy["status"] == "miss"
    assert by["numerics: distinct fixed-order sums in 10 runs"]["status"] == "pass"
    assert by["numerics: fixed-order sum time / atomicAdd sum time"]["status"] == "miss"
    runs[1]["result"]["summary"]["fixed-order_distinct"] = 3
    by = {c["name"]: c for c in bench_targets.syllabus_comparisons(runs)}
    assert by["numerics: distinct fixed-order sums in 10 runs"]["status"] == "miss"


# ---- on a GPU ------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_warp_shuffle_runs_and_judges_against_the_copy() -> None:
    inv = detect()
    if not inv.available("cupy"):
        pytest.skip("needs CuPy on a GPU")
    events: list[dict] = []
    params = {"n": 1 << 24, "per_thread": [1, 32]}
    assert run_job("g", "warp-shuffle", params, inv, events.append, quick=True) == "result"
    result = events[-1]["result"]
    assert all(v["passed"] for v in result["verdicts"]) and len(result["verdicts"]) == 4
    rows = {(m["contender"], m["size"]): m for m in result["measurements"]}
    assert {("shared-tree", "1/thread"), ("warp-shuffle", "32/thread"), ("copy", "n")} <= set(rows)
    for m in rows.values():
        assert m["throughput"] > 0
        assert m["percent_of_peak"] is None or m["percent_of_peak"] <= 105
    assert rows[("warp-shuffle", "1/thread")]["extra"]["shared_bytes"] == 32
    assert rows[("shared-tree", "1/thread")]["extra"]["shared_bytes"] == 1024
    assert set(result["summary"]["shuffle_vs_tree"]) == {"1", "32"}
    assert "shared tree" in result["headline"]


@pytest.mark.gpu
def test_gpu_numerics_counts_distinct_results_and_dtype_errors() -> None:
    inv = detect()
    if not inv.has_gpu:
        pytest.skip("needs a GPU")
    events: list[dict] = []
    params = {"n": 1 << 22, "runs": 8, "size": 1024, "acc_max": 1 << 14}
    assert run_job("g", "numerics", params, inv, events.append, quick=True) == "result"
    result = events[-1]["result"]
    for v in result["verdicts"]:
        assert v["passed"], v
    s = result["summary"]
    if inv.available("cupy"):
        assert s["fixed-order_distinct"] == 1 and 1 <= s["atomic_distinct"] <= 8
        assert s["fast-expf_error"] > s["expf_error"]
    assert s["index-add-det_distinct"] == 1
    errs = s["matmul_error"]
    assert errs["fp32"] < 1e-5 and errs["tf32"] > 10 * errs["fp32"]
    assert errs["bf16"] > errs["fp16"] > errs["fp32"]
    assert not math.isnan(s["index_add_det_vs_atomic_time"])
