"""Chapters 18 (streams) and 19 (CUDA graphs): lessons, experiments, exercises, bench targets.

On the CPU: the links between lesson, exercise and experiment both ways, the checks' judging
rules on hand-made timings and outputs, the experiments' arithmetic and their one-line refusal
without a GPU, the bench targets, the known-wrong and right files' form, and the memory probe's
pause. Under -m gpu: the references graded (streams-overlap silver or better), the known-wrong
solutions rejected with their message, the right ones passing, both experiments' figures, and
each figure written to $GPULAB_OUT (a folder) when it is set.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog
from gpulab.lessons.catalog import load_catalog as load_lessons

CHAPTERS = {  # lesson id -> (exercise id, experiment id)
    "streams": ("streams-overlap", "streams-overlap"),
    "cuda-graphs": ("cuda-graphs", "cuda-graphs"),
}
EXERCISES = load_catalog()


def _check_module(exercise_id: str):
    ex = EXERCISES.get(exercise_id)
    spec = importlib.util.spec_from_file_location(f"_test_check_{ex.folder.name}", ex.check_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ links, both ways


@pytest.mark.parametrize("lesson_id", sorted(CHAPTERS))
def test_lesson_exercise_and_experiment_link_both_ways(lesson_id):
    from gpulab.experiments.registry import get

    exercise_id, experiment_id = CHAPTERS[lesson_id]
    lesson = load_lessons(strict=True).get(lesson_id)
    body = lesson.body
    assert f"](exercise:{exercise_id})" in body, f"{lesson.source}: no Practise it link"
    assert experiment_id in {link.experiment for link in lesson.links()}
    assert experiment_id in lesson.experiments
    assert EXERCISES.get(exercise_id).lesson == lesson_id
    assert get(experiment_id).lesson == lesson_id


def test_the_new_chapters_follow_the_first_seventeen():
    lessons = load_lessons(strict=True)
    assert lessons.get("streams").chapter == 18 and lessons.get("cuda-graphs").chapter == 19


@pytest.mark.parametrize("exercise_id", ["streams-overlap", "cuda-graphs"])
def test_exercises_need_a_gpu_and_say_so_in_one_line(exercise_id):
    from gpulab.core.devices import Inventory

    ex = EXERCISES.get(exercise_id)
    assert ex.needs == ("gpu",)
    why = ex.unavailable(Inventory())
    assert why.startswith("needs a GPU") and "\n" not in why


@pytest.mark.parametrize("exercise_id", ["streams-overlap", "cuda-graphs"])
def test_wrong_and_right_files_say_what_they_are_and_define_the_entry(exercise_id):
    ex = EXERCISES.get(exercise_id)
    files = [(p, "# expect: ") for p in (ex.folder / "wrong").glob("*.py")]
    files += [(p, "# why: ") for p in (ex.folder / "right").glob("*.py")]
    assert len([f for f in files if f[1] == "# expect: "]) >= 3
    assert len([f for f in files if f[1] == "# why: "]) >= 2
    for path, first in [*files, (ex.solution_path, ""), (ex.starter_path, "")]:
        text = path.read_text(encoding="utf-8")
        assert text.startswith(first), f"{path}: first line must start with {first!r}"
        names = {n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
        assert ex.entry in names, f"{path}: no {ex.entry}()"


# ------------------------------------------------------------------ streams-overlap's rules


def _rounds(yours, serial=4.6e-3, ours=2.8e-3, copies=2.4e-3, computes=2.2e-3, waits=0):
    return {
        "chunks": 8,
        "yours": [yours] * 5,
        "serial": [serial] * 5,
        "ours": [ours] * 5,
        "copies": [copies] * 5,
        "computes": [computes] * 5,
        "waits": waits,
    }


def test_overlap_saving_is_half_of_ours_and_names_what_is_missing():
    check = _check_module("streams-overlap")
    # ours saves 1.8 ms of the serial 4.6 ms; half of that (0.9 ms) is asked of yours
    assert check.judge_overlap(_rounds(2.8e-3)) == (None, "")
    assert check.judge_overlap(_rounds(3.6e-3))[0] is None  # 56% of our saving
    serial, _ = check.judge_overlap(_rounds(4.5e-3))
    assert "copy chunk i+1 on a side stream" in serial.message and "saves 6%" in serial.message
    assert "perfect overlap takes 2.67 ms" in serial.message
    synced, _ = check.judge_overlap(_rounds(4.4e-3, waits=8))
    assert "waited on the host 8 times" in synced.message
    fresh, _ = check.judge_overlap({**_rounds(4.5e-3), "streams_per_call": 2})
    assert "made 2 new stream(s) on every call" in fresh.message
    assert check.judge_overlap({**_rounds(2.8e-3), "streams_per_call": 2})[0] is None
    # a machine where even ours saves nothing (copies dwarf the compute): no rule, a note
    bad, note = check.judge_overlap(_rounds(4.6e-3, ours=4.5e-3, copies=4.5e-3, computes=1e-4))
    assert bad is None and "speed not graded" in note


def test_overlap_mismatch_names_the_race_and_the_first_wrong_element():
    import torch

    check = _check_module("streams-overlap")
    want = torch.tanh(torch.randn(64, 32, dtype=torch.float64))
    assert check._device_mismatch(want, want.float(), "chunk 0", torch) is None
    stale = want.float().clone()
    stale[3, 5] += 0.5
    bad = check._device_mismatch(want, stale, "chunk 2 of 4", torch)
    assert bad.index == (3, 5) and bad.wrong == 1
    assert "chunk 2 of 4" in bad.message and "make the current stream wait for" in bad.message
    assert "record_stream" in bad.message
    nan = want.float().clone()
    nan[0, 0] = float("nan")
    assert check._device_mismatch(want, nan, "chunk 0", torch).index == (0, 0)


def test_overlap_columns_follow_the_measured_rates():
    check = _check_module("streams-overlap")
    # compute 0.9x a 300 us copy, with 170 us at m=1024: m ~ 1626 -> a multiple of 32
    m = check._columns(300e-6, 170e-6, 0.9)
    assert m % 32 == 0 and 1600 <= m <= 1660
    assert check._columns(1e-3, 1e-6, 100.0) == 8192 and check._columns(1e-6, 1e-3, 0.1) == 32


# ------------------------------------------------------------------ cuda-graphs' rules


def _graph_case(n=8, calls=4):
    check = _check_module("cuda-graphs")
    rng = np.random.default_rng(5)
    coef = rng.uniform(0.5, 1.5, size=(check.LAYERS, 2)) * np.array([1.0, 0.2])
    xs = rng.standard_normal((calls + 1, n)).astype(np.float32)
    case = api.Case("t", {"xs": xs, "coef": coef, "timed": False})
    return check, case, check.expected(case, None)


def test_graph_compare_accepts_float32_and_names_a_stale_input():
    check, case, want = _graph_case()
    assert check.compare(want, {"out": want.astype(np.float32)}, case, None) is None
    stale = np.repeat(want[:1], len(want), axis=0)  # every call returned the first output
    bad = check.compare(want, {"out": stale}, case, None)
    assert "same output for all" in bad.message and "copy each new x" in bad.message.lower()
    off = want.copy()
    off[2, 3] += 0.1
    bad = check.compare(want, {"out": off}, case, None)
    assert bad.message.startswith("call 3: ") and "same output" not in bad.message


def test_graph_saving_is_measured_against_our_own_replay():
    check = _check_module("cuda-graphs")
    # ours saves 230 us of 330: a replay saving 230 passes, one saving 30 (a tenth) fails
    bad, note = check.judge_replay(
        {"graph": [100e-6] * 5, "eager": [330e-6] * 5, "ours": [100e-6] * 5}
    )
    assert bad is None and note == ""
    slow, _ = check.judge_replay(
        {"graph": [300e-6] * 5, "eager": [330e-6] * 5, "ours": [100e-6] * 5}
    )
    assert "1.10x" in slow.message and "ours takes 0.1 ms (3.30x)" in slow.message
    assert "saves 13% of what ours saves, at least 50%" in slow.message
    # a GPU where even ours gains 1.05x: no rule, said as a note, correctness only
    none, note = check.judge_replay(
        {"graph": [330e-6] * 5, "eager": [330e-6] * 5, "ours": [315e-6] * 5}
    )
    assert none is None and "speed not graded" in note and "1.05x" in note


# ------------------------------------------------------------------ experiments


def test_streams_overlap_arithmetic_and_timeline():
    from gpulab.experiments.streams_overlap import columns_for, ideal_s, timeline

    assert ideal_s(2.4e-3, 2.2e-3, 8) == pytest.approx(2.4e-3 + 2.2e-3 / 8)
    assert ideal_s(1e-3, 3e-3, 4) == pytest.approx(3e-3 + 1e-3 / 4)
    assert columns_for(300e-6, 150e-6, 1.0) == 2048
    text = timeline({"copy": [(0.0, 0.5e-3)], "compute": [(0.5e-3, 1e-3)]}, 1e-3, width=10)
    rows = text.splitlines()
    assert rows[0].endswith("|#####.....|") and rows[1].endswith("|.....#####|")
    assert rows[2].strip().endswith("1.00 ms")


def test_cuda_graphs_saving_per_kernel():
    from gpulab.experiments.cuda_graphs import coefficients, saved_per_kernel_us

    assert saved_per_kernel_us(330e-6, 90e-6, 72) == pytest.approx(3.333, rel=1e-3)
    assert len(coefficients(24)) == 24 and all(0.9 <= a <= 1.1 for a, _ in coefficients(24))


@pytest.mark.parametrize("experiment_id", ["streams-overlap", "cuda-graphs"])
def test_experiments_refuse_without_a_gpu_in_one_line(experiment_id):
    from gpulab.core.devices import Inventory
    from gpulab.experiments.base import ExperimentError
    from gpulab.experiments.registry import get

    exp = get(experiment_id)
    with pytest.raises(ExperimentError) as info:
        exp.check(exp.params.defaults(), Inventory())
    assert "needs a GPU" in str(info.value) and "\n" not in str(info.value)


def test_bench_targets_judge_the_summaries():
    from gpulab.benchmark.targets import syllabus_comparisons

    runs = [
        {
            "experiment": "streams-overlap",
            "status": "result",
            "result": {"summary": {"saved_of_ideal": 0.9, "speedup": 1.6}},
        },
        {
            "experiment": "cuda-graphs",
            "status": "result",
            "result": {"summary": {"speedup": 1.5, "kernels": 72}},
        },
    ]
    rows = {r["name"].split(":")[0]: r for r in syllabus_comparisons(runs)}
    assert rows["streams-overlap"]["status"] == "pass"
    assert rows["cuda-graphs"]["status"] == "miss" and "72 kernels" in rows["cuda-graphs"]["name"]


def test_memory_probe_reads_no_device_figure_while_paused(monkeypatch):
    from gpulab.core import memory

    asked = []
    cuda = types.SimpleNamespace(
        is_initialized=lambda: True,
        memory_allocated=lambda i: 1,
        memory_reserved=lambda i: 2,
        max_memory_allocated=lambda i: 3,
        mem_get_info=lambda i: asked.append(i) or (10, 20),
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    with memory.device_queries_paused():
        paused = memory.probe(0)
    assert not asked and paused["torch_allocated"] == 1 and "device_free" not in paused
    assert memory.probe(0)["device_free"] == 10 and asked == [0]


# ------------------------------------------------------------------ on a GPU


def _gpu_inventory():
    from gpulab.core.devices import detect

    inv = detect()
    if not inv.available("torch-cuda"):
        pytest.skip("needs an NVIDIA GPU with a CUDA build of torch")
    return inv


def _write(name: str, data: dict) -> None:
    out = os.environ.get("GPULAB_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{name}.json").write_text(json.dumps(data, indent=1, default=str))


@pytest.mark.gpu
@pytest.mark.parametrize("exercise_id", ["streams-overlap", "cuda-graphs"])
def test_gpu_reference_grade_wrongs_and_rights(exercise_id):
    """The reference (full timing, not quick), each known-wrong and each right solution, in this
    process; streams-overlap's reference must reach silver."""
    from gpulab.exercises.job import check_inline

    inv = _gpu_inventory()
    ex = EXERCISES.get(exercise_id)
    seen: dict[str, dict] = {}
    ref, _ = check_inline(exercise_id, str(ex.solution_path), 11, quick=False, inventory=inv)
    seen["solution"] = {"verdict": ref.verdict, "grade": ref.grade, "message": ref.message,
                        "timing": ref.timing, "cases": [c.__dict__ for c in ref.cases]}  # fmt: skip
    problems = []
    if ref.verdict != "pass":
        problems.append(f"solution: {ref.message}")
    if exercise_id == "streams-overlap" and ref.grade not in ("silver", "gold"):
        problems.append(f"solution graded {ref.grade}: {ref.timing}")
    for w in ex.wrong:
        res, _ = check_inline(exercise_id, str(w.path), 7, quick=True, inventory=inv)
        seen[f"wrong/{w.path.name}"] = {"verdict": res.verdict, "message": res.message}
        if res.verdict == "pass" or not w.matches(res.message):
            problems.append(f"{w.path.name}: {res.verdict}: {res.message}")
    for p in sorted((ex.folder / "right").glob("*.py")):
        res, _ = check_inline(exercise_id, str(p), 7, quick=True, inventory=inv)
        seen[f"right/{p.name}"] = {"verdict": res.verdict, "message": res.message}
        if res.verdict != "pass":
            problems.append(f"right/{p.name}: {res.message}")
    _write(f"exercise-{exercise_id}", seen)
    assert not problems, "\n".join(problems)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("experiment_id", "params"),
    [
        ("streams-overlap", {"chunk_mib": 16, "chunks": 8, "ratio": 1.0}),
        ("cuda-graphs", {"n": 4096, "layers": 24}),
    ],
)
def test_gpu_experiment_measures_its_claim(experiment_id, params):
    from gpulab.experiments.inline import run_job

    inv = _gpu_inventory()
    events: list[dict] = []
    final = run_job("g", experiment_id, params, inv, events.append, quick=False)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    _write(f"experiment-{experiment_id}", result)
    assert all(v["passed"] for v in result["verdicts"]), result["verdicts"]
    s = result["summary"]
    assert result["headline"] and "\n" not in result["headline"]
    if experiment_id == "streams-overlap":
        assert s["speedup"] > 1.2 and s["saved_of_ideal"] > 0.5, s
        assert [a for a in result["artifacts"] if a["name"] == "timeline"]
        lanes = s["busy_intervals_s"]
        assert len(lanes["side stream: copy"]) == 8 and len(lanes["main stream: compute"]) == 8
    else:
        assert s["speedup"] > 1.5 and s["saved_per_kernel_us"] > 0.5, s
