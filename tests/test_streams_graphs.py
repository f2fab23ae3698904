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
    from gpulab.testing.checks import open_check  # why not importlib: its module doc

    return open_check(EXERCISES.get(exercise_id))


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


def _rounds(yours, serial=40e-3, ours=19e-3, stages=(8e-3, 16e-3, 16e-3), **extra):
    """Eight chunks with stage times 1 : 2 : 2 ms (in, compute, back): serial 40 ms, full
    overlap about 19 ms."""
    return {
        "chunks": 8,
        "yours": [yours] * 5,
        "serial": [serial] * 5,
        "ours": [ours] * 5,
        "copies_in": [stages[0]] * 5,
        "computes": [stages[1]] * 5,
        "copies_back": [stages[2]] * 5,
        "waits": 1,
        "placement": {"in": "side", "back": "side", "shared": False},
        **extra,
    }


def test_overlap_saving_is_half_of_ours_and_names_the_stage_left_on_the_compute_stream():
    check = _check_module("streams-overlap")
    assert check.judge_overlap(_rounds(19e-3)) == (None, "")
    # the copy back overlapped, the copy in not: 3 ms a chunk, saves 2/3 of ours: passes
    assert check.judge_overlap(_rounds(26e-3))[0] is None
    # the lesson's prefetcher, the copy back on the compute stream: 4 ms a chunk, a third
    prefetch = {"in": "side", "back": "caller", "shared": False}
    bad, _ = check.judge_overlap(_rounds(33e-3, placement=prefetch))
    assert "saves 33% of what ours saves" in bad.message
    assert "perfect overlap takes 19 ms" in bad.message  # 16 + (8 + 16) / 8
    assert "copies back ran on the stream step() computes on" in bad.message
    serial = {"in": "caller", "back": "caller", "shared": False}
    bad, _ = check.judge_overlap(_rounds(39e-3, placement=serial))
    assert "copies in and back all ran on the stream step() computes on" in bad.message
    inward = {"in": "caller", "back": "side", "shared": False}
    assert (
        "copies in ran on the stream"
        in check.judge_overlap(_rounds(39e-3, placement=inward))[0].message
    )
    shared = {"in": "side", "back": "side", "shared": True}
    assert (
        "shared one side stream" in check.judge_overlap(_rounds(39e-3, placement=shared))[0].message
    )
    synced, _ = check.judge_overlap(_rounds(39e-3, waits=8))
    assert "waited on the host 8 times" in synced.message
    fresh, _ = check.judge_overlap(_rounds(39e-3, streams_per_call=2))
    assert "made 2 new stream(s) on every call" in fresh.message
    # a machine where even ours saves nothing: no rule, a note
    bad, note = check.judge_overlap(_rounds(40e-3, ours=38e-3))
    assert bad is None and "speed not graded" in note


def test_a_recorded_call_fails_on_pageable_copies_and_on_copies_back_left_queued():
    check = _check_module("streams-overlap")
    main, up, down = 1, 2, 3
    good = [("in", True, up), ("in", True, up), ("back", True, True, down), ("wait", "s")]
    assert check.judge_call(good) == ""
    assert check.judge_call([("in", True, main), ("back", True, False, main)]) == ""  # blocking
    assert "from pageable memory" in check.judge_call([("in", False, up), ("wait", "s")])
    assert "pageable host memory" in check.judge_call([("back", False, False, main)])
    late = [("in", True, up), ("wait", "s"), ("back", True, True, down)]
    assert "returned before its copies to the host had landed" in check.judge_call(late)
    assert "had landed" in check.judge_call([("in", True, up), ("back", True, True, main)])
    where = check.placement(good, main)
    assert where == {"in": "side", "back": "side", "shared": False}
    assert check.placement([("in", True, main), ("back", True, True, main)], main) == {
        "in": "caller",
        "back": "caller",
        "shared": False,
    }
    assert check.placement([("in", True, up), ("back", True, True, up)], main)["shared"]


class _FakeTensor:
    """Stands for a tensor on a device (the CPU box has no CUDA tensors)."""

    def __init__(self, device: str, pinned: bool = False) -> None:
        self.device = types.SimpleNamespace(type=device)
        self.pinned = pinned

    def is_pinned(self) -> bool:
        return self.pinned


def _fake_torch(tensor=None):
    class Stream:
        cuda_stream = 7

        def synchronize(self) -> None:
            pass

    class Event:
        def synchronize(self) -> None:
            pass

    def synchronize() -> None:
        pass

    cuda = types.SimpleNamespace(
        synchronize=synchronize, Stream=Stream, Event=Event, current_stream=lambda: Stream()
    )
    return types.SimpleNamespace(Tensor=tensor or _FakeTensor, cuda=cuda)


def test_the_recording_tells_each_copy_its_direction_memory_and_blocking():
    check = _check_module("streams-overlap")
    fake, log = _fake_torch(), []
    T = _FakeTensor
    check._record(log, fake, "to", (T("cpu", True), "cuda"), {"non_blocking": True}, T("cuda"))
    check._record(log, fake, "cuda", (T("cpu", False),), {}, T("cuda"))
    check._record(log, fake, "copy_", (T("cpu", True), T("cuda"), True), {}, None)
    check._record(log, fake, "copy_", (T("cpu", True), T("cuda")), {}, None)
    check._record(log, fake, "cpu", (T("cuda"),), {}, T("cpu"))
    check._record(log, fake, "__setitem__", (T("cpu", True), slice(None), T("cuda")), {}, None)
    check._record(log, fake, "copy_", (T("cuda"), T("cuda")), {}, None)  # on the device: no copy
    assert log == [
        ("in", True, 7),
        ("in", False, 7),
        ("back", True, True, 7),
        ("back", True, False, 7),
        ("back", False, False, 7),
        ("back", True, False, 7),
    ]


def test_the_recording_counts_the_host_waits_the_learners_code_makes():
    import torch

    check = _check_module("streams-overlap")
    fake = _fake_torch(tensor=torch.Tensor)
    learner = types.ModuleType("_gpulab_learner_streams_1")
    exec(
        "def pipeline(t):\n"
        "    t.cuda.synchronize()\n"
        "    t.cuda.Stream().synchronize()\n"
        "    t.cuda.Event().synchronize()\n",
        learner.__dict__,
    )
    before = sys.getprofile()
    with check._Watch(fake) as seen:
        learner.pipeline(fake)
        fake.cuda.synchronize()  # the check's own wait: not the learner's
        torch.zeros(2).copy_(torch.ones(2))  # a copy on the host: not between host and GPU
    assert sys.getprofile() is before
    assert seen.caller == 7
    assert seen.log == [
        ("wait", "torch.cuda.synchronize()"),
        ("wait", "Stream.synchronize()"),
        ("wait", "Event.synchronize()"),
    ]


def test_overlap_mismatch_names_the_race_a_misplaced_chunk_and_a_copy_never_made():
    import torch

    check = _check_module("streams-overlap")
    refs = [torch.tanh(torch.randn(16, 8)) for _ in range(3)]
    assert check._mismatch(refs[0], refs[0].clone(), "chunk 0") is None
    stale = refs[0].clone()
    stale[3, 5] += 0.5
    bad = check._mismatch(refs[0], stale, "chunk 0 of 3", refs)
    assert bad.index == (3, 5) and bad.wrong == 1
    assert "chunk 0 of 3" in bad.message and "make each copy back wait for its step" in bad.message
    assert "record_stream on the stream that reads it" in bad.message
    moved = check._mismatch(refs[0], refs[2].clone(), "chunk 0 of 3", refs)
    assert "it holds chunk 2's output" in moved.message
    nan = torch.full_like(refs[1], float("nan"))
    assert "never copied back" in check._mismatch(refs[1], nan, "chunk 1", refs).message


def test_overlap_stage_widths_follow_the_measured_rates():
    check = _check_module("streams-overlap")
    assert check._round32(1626.0, 32, 8192) == 1632
    assert check._round32(1e9, 32, 8192) == 8192 and check._round32(1.0, 32, 8192) == 32
    names = [p[0] for p in check.PLAN]
    assert names[-1].startswith("balanced") and (check.TIMED_CHUNKS, check.TIMED_ROWS) == (8, 2048)
    # the timed case: compute and copy back each twice the copy in
    assert check.PLAN[-1][3:] == (2.0, 2.0)


# ------------------------------------------------------------------ cuda-graphs' rules


def _graph_case(seed=5, case=0):
    check = _check_module("cuda-graphs")
    ctx = api.Context(
        rng=np.random.default_rng(seed), seed=seed, gpu=False, cupy=False, device="cpu"
    )
    return check, check.cases(ctx)[case]


def test_graph_cases_are_64_tensors_with_a_changing_learning_rate():
    check, case = _graph_case()
    assert len(case.args["shapes"]) == 64 and case.args["grads"].shape[0] == check.CALLS
    lrs = case.args["lrs"]
    assert len(set(lrs.tolist())) == len(lrs) and np.ptp(lrs) > 0.05 * lrs.mean()
    _, tiny = _graph_case(case=1)
    assert any(int(np.prod(s)) == 1 for s in tiny.args["shapes"])


def test_graph_reference_is_torch_sgd_with_momentum():
    import torch

    check, case = _graph_case()
    a = case.args
    want = check.expected(case, None)
    p = torch.nn.Parameter(torch.from_numpy(a["p0"]).double())
    opt = torch.optim.SGD([p], lr=0.1, momentum=a["momentum"])
    for k in range(check.CALLS):
        p.grad = torch.from_numpy(a["grads"][k]).double()
        opt.param_groups[0]["lr"] = float(a["lrs"][k])
        opt.step()
        assert np.allclose(p.detach().numpy(), want[k], rtol=1e-12, atol=1e-12)


def _learner(a, lrs=None, momentum=None, grads=None, reset=False):
    """A learner's parameters after each call (float64), with one thing done wrong."""
    p = a["p0"].astype(np.float64)
    buf = np.zeros_like(p)
    out = []
    lrs = a["lrs"] if lrs is None else lrs
    for k, lr in enumerate(lrs):
        g = (a["grads"][k] if grads is None else grads).astype(np.float64)
        buf = (0 if reset else (a["momentum"] if momentum is None else momentum) * buf) + g
        p = p - lr * buf
        out.append(p)
    return np.array(out, dtype=np.float32).astype(np.float64)


def test_graph_compare_says_what_the_parameters_show():
    check, case = _graph_case()
    a = case.args
    want = check.expected(case, None)
    assert check.compare(want, {"after": _learner(a)}, case, None) is None
    frozen = check.compare(want, {"after": _learner(a, lrs=np.full(check.CALLS, 0.01))}, case, None)
    assert frozen.message.startswith("after call 1 of 8: parameter ")
    assert "as if lr were 0.01" in frozen.message and "frozen into the graph" in frozen.message
    reset = check.compare(want, {"after": _learner(a, reset=True)}, case, None)
    assert reset.message.startswith("after call 2 of 8")
    assert "momentum buffers start from zero" in reset.message
    still = np.repeat(a["p0"][None].astype(np.float64), check.CALLS, axis=0)
    assert (
        "did not change the parameters" in check.compare(want, {"after": still}, case, None).message
    )
    stale = check.compare(want, {"after": _learner(a, grads=a["g_make"])}, case, None)
    assert "gradients `grads` held when make_step ran" in stale.message
    noise = _learner(a) + 1e-3
    other = check.compare(want, {"after": noise}, case, None)
    assert other.message.startswith("after call 1 of 8") and "frozen" not in other.message


def test_graph_parameter_index_names_the_tensor_and_its_element():
    check = _check_module("cuda-graphs")
    shapes = [(3, 4), (3,), (2, 3)]
    assert check._where(0, shapes) == "parameter 0[0, 0]"
    assert check._where(13, shapes) == "parameter 1[1]"
    assert check._where(20, shapes) == "parameter 2[1, 2]"


def test_graph_saving_is_measured_against_our_own_replay():
    check = _check_module("cuda-graphs")
    # ours saves 630 us of 900: a replay saving as much passes, one saving a tenth fails
    bad, note = check.judge_replay(
        {"graph": [270e-6] * 5, "eager": [900e-6] * 5, "ours": [270e-6] * 5}
    )
    assert bad is None and note == ""
    slow, _ = check.judge_replay(
        {"graph": [840e-6] * 5, "eager": [900e-6] * 5, "ours": [270e-6] * 5}
    )
    assert "1.07x" in slow.message and "ours takes 0.27 ms (3.33x)" in slow.message
    assert "saves 10% of what ours saves, at least 50%" in slow.message
    assert "all 192 kernels" in slow.message
    none, note = check.judge_replay(
        {"graph": [900e-6] * 5, "eager": [900e-6] * 5, "ours": [860e-6] * 5}
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
@pytest.mark.alone
@pytest.mark.parametrize(
    "exercise_id", [pytest.param("streams-overlap", marks=pytest.mark.host), "cuda-graphs"]
)
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
@pytest.mark.alone
@pytest.mark.parametrize(
    ("experiment_id", "params"),
    [
        pytest.param(
            "streams-overlap", {"chunk_mib": 16, "chunks": 8, "ratio": 1.0}, marks=pytest.mark.host
        ),
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


def _outputs_torch(done: list[bool]):
    """A fake torch for check.Outputs: streams are numbers (`now` is the current one), and an
    event's query() answers done[0] (whether the GPU has reached it)."""

    class Tensor:
        device = types.SimpleNamespace(type="cuda")

    now = types.SimpleNamespace(cuda_stream=1)

    class Event:
        def record(self, stream) -> None:
            pass

        def query(self) -> bool:
            return done[0]

    cuda = types.SimpleNamespace(current_stream=lambda: now, Event=Event)
    return types.SimpleNamespace(Tensor=Tensor, cuda=cuda), now


@pytest.mark.parametrize(
    "story, flagged",
    [
        ("dropped while its copy back on another stream reads it", True),
        ("record_stream on the copy's stream", False),
        ("the making stream waited for the copy's stream", False),
        ("the copy had landed after a host wait", False),
        ("the copy had landed, no host wait", True),
        ("a blocking copy back", False),
        ("copied back on the stream that made it", False),
    ],
)
def test_an_output_let_go_under_its_copy_back_is_named(story, flagged):
    """The allocator reuses a freed block on the stream that made it at once: an output of
    step() let go while a copy back on another stream still reads it is named from what ran,
    and each way of keeping the block (or no other stream) is not."""
    check = _check_module("streams-overlap")
    done = [story.startswith("the copy had landed")]
    fake, now = _outputs_torch(done)
    log: list[tuple] = []
    outputs = check.Outputs(fake, log)
    y = outputs.made(fake.Tensor())  # made on stream 1
    if story != "copied back on the stream that made it":
        now.cuda_stream = 2
    outputs.copied(y, now.cuda_stream, blocking=story == "a blocking copy back")
    if story == "the copy had landed after a host wait":
        log.append(("wait", "Stream.synchronize()"))
    if story == "record_stream on the copy's stream":
        outputs.recorded(y, types.SimpleNamespace(cuda_stream=2))
    if story == "the making stream waited for the copy's stream":
        outputs.waited(1, 2)
    del y
    assert (("freed", 0) in log) is flagged
    log[:] = [e for e in log if e[0] == "freed"]
    why = check.judge_call([("in", True, 2), *log, ("back", True, True, 3), ("wait", "s")])
    assert ("record_stream on the stream that reads it" in why) is flagged
