"""Chapters Triton and torch.compile: their exercises, experiments and bench targets.

On the CPU the Triton exercises run through Triton's interpreter (correctness only, labelled so);
the catalog test (test_exercises_catalog.py) runs every reference, wrong/ and right/ file there,
and checks a reference's interpreter label and missing grade. This file adds what that one does
not: the watch's count of Triton launches, and under -m gpu the compiled Triton path (references
graded silver or better; the catalog test runs every wrong/ and right/ file compiled there,
through a worker that a faulting kernel cannot take down with it) and both experiments on the
GPU.
"""

from __future__ import annotations

import functools
import importlib.util

import pytest

from gpulab.benchmark import targets as bench_targets
from gpulab.exercises.job import check_inline
from gpulab.exercises.loader import load_catalog

CATALOG = load_catalog()
TRITON = [ex for ex in CATALOG if "triton" in ex.needs]
needs_triton = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None, reason="needs Triton (pip install triton)"
)


@functools.cache
def _inventory():
    from gpulab.core.devices import detect

    return detect()


def _has_gpu() -> bool:
    return any(d.kind == "cuda" for d in _inventory().devices)


def test_the_chapters_are_in_the_catalog_and_linked():
    ids = {ex.id: ex for ex in CATALOG}
    for name in ("triton-affine-clamp", "triton-causal-softmax", "triton-matmul"):
        assert ids[name].lesson == "triton" and ids[name].needs == ("triton",)
    assert ids["compile-fused"].lesson == "torch-compile"
    from gpulab.experiments import registry
    from gpulab.lessons.catalog import load_catalog as load_lessons

    lessons = load_lessons()
    for lesson, exercises, experiment in (
        (
            "triton",
            ["triton-affine-clamp", "triton-causal-softmax", "triton-matmul"],
            "triton-kernels",
        ),
        ("torch-compile", ["compile-fused"], "torch-compile"),
    ):
        text = lessons.get(lesson).body
        for ex in exercises:
            assert f"(exercise:{ex})" in text, (lesson, ex)
        assert f"(experiment:{experiment}" in text, (lesson, experiment)
        assert registry.get(experiment).lesson == lesson


@needs_triton
def test_the_watch_counts_triton_launches_and_names_a_missing_kernel(tmp_path):
    """A file whose function does the work with torch instead of its jitted kernel fails, even
    when it defines one."""
    if _has_gpu():
        pytest.skip("the CPU interpreter path")
    ex = CATALOG.get("triton-affine-clamp")
    src = ex.solution_path.read_text(encoding="utf-8")
    idle = tmp_path / "idle.py"
    idle.write_text(
        src + "\n\ndef affine_clamp(x, scale, bias, lo, hi, out):  # noqa: F811\n"
        "    out.copy_(x)\n    out.mul_(scale)\n",
        encoding="utf-8",
    )
    result = check_inline(ex.id, str(idle), 3, quick=True, inventory=_inventory())[0]
    assert result.verdict == "fail"
    # torch's copy_ and mul_ are outside what the exercise allows: refused before the launch
    # count is read
    assert "aten.copy_, which is not among the operations this exercise allows" in result.message


def test_compile_targets_and_triton_targets_judge_their_summaries():
    runs = [
        {
            "experiment": "triton-kernels",
            "status": "result",
            "result": {
                "summary": {
                    "triton-add_of_copy": 0.9,
                    "triton-softmax_over_torch-softmax": 0.7,
                    "triton-softmax_over_torch-softmax-eager": 3.1,
                }
            },
        },
        {
            "experiment": "torch-compile",
            "status": "result",
            "result": {
                "summary": {"chain-compiled_speedup": 4.0, "mlp-graphs_over_mlp-compiled": 1.2}
            },
        },
    ]
    by = {c["name"]: c for c in bench_targets.syllabus_comparisons(runs)}
    assert by["triton-kernels: Triton add GB/s / device copy GB/s"]["status"] == "pass"
    assert by["triton-kernels: Triton fused softmax GB/s / torch.softmax GB/s"]["status"] == "miss"
    assert by["torch-compile: compiled elementwise chain speedup over eager"]["status"] == "pass"
    graphs = 'torch-compile: MLP mode="reduce-overhead" speedup over the default compile'
    assert by[graphs]["status"] == "miss"


def test_torch_compile_experiment_runs_on_the_cpu():
    if _has_gpu():
        pytest.skip("the GPU rows are tested under -m gpu")
    from gpulab.experiments.inline import run_job

    events: list[dict] = []
    params = {"n": 200_000, "batch": 8, "width": 64}
    final = run_job("c", "torch-compile", params, _inventory(), events.append, quick=True)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    assert result["verdicts"] and all(v["passed"] for v in result["verdicts"])
    rows = {m["contender"]: m for m in result["measurements"]}
    assert {"cpu-chain-eager", "cpu-chain-compiled", "cpu-mlp-eager"} <= set(rows)
    compiled = rows["cpu-chain-compiled"]["extra"]
    assert compiled["compile_s"] >= 0 and "saved_ms_per_call" in compiled


def test_triton_experiment_says_why_without_a_gpu():
    if _has_gpu():
        pytest.skip("the GPU rows are tested under -m gpu")
    from gpulab.experiments.inline import run_job

    events: list[dict] = []
    final = run_job("t", "triton-kernels", {"n": 1000}, _inventory(), events.append, quick=True)
    assert final == "result"
    result = events[-1]["result"]
    assert not result["measurements"]
    assert "needs a GPU" in result["unavailable"]["triton-add"]


# -- on the GPU ------------------------------------------------------------------------------


def _gpu_check(ex, path, seed, quick=True):
    return check_inline(ex.id, str(path), seed, quick=quick, inventory=_inventory())[0]


@pytest.mark.gpu
@pytest.mark.alone
@needs_triton
@pytest.mark.parametrize("ex", TRITON, ids=[ex.id for ex in TRITON])
def test_triton_reference_on_the_gpu_is_silver_or_better(ex):
    if not _has_gpu():
        pytest.skip("needs a GPU")
    result = _gpu_check(ex, ex.solution_path, 1234, quick=False)
    assert result.verdict == "pass", result.message
    t = result.timing
    assert t is not None, result.message
    frac = t["learner"]["value"] / t["ceiling"]["value"] if t.get("ceiling") else None
    print(f"{ex.id}: {t['learner']['value']:.1f} {ex.metric}, {frac}, grade {result.grade}")
    assert result.grade in ("silver", "gold"), (result.grade, t)


@pytest.mark.gpu
@pytest.mark.alone
def test_compile_fused_on_the_gpu():
    if not _has_gpu():
        pytest.skip("needs a GPU")
    ex = CATALOG.get("compile-fused")
    result = _gpu_check(ex, ex.solution_path, 3)
    assert result.verdict == "pass", result.message
    # each fails here too; which rule names it first is the catalog test's (through a worker):
    # in this process, after the compiles above, the saving rule can come first (H200)
    shortcuts = [w for w in ex.wrong if not w.cpu_only]
    assert len(shortcuts) < len(ex.wrong)  # numpy-on-the-large-input does the work on a GPU
    for w in shortcuts:
        result = _gpu_check(ex, w.path, 3)
        assert result.verdict == "fail", (w.name, result.message)


@pytest.mark.gpu
@pytest.mark.alone
@pytest.mark.parametrize(
    ("exp_id", "params"),
    [
        ("triton-kernels", {"n": 10_000_003, "rows": 4096, "cols": 4096}),
        ("torch-compile", {"n": 16_000_000, "batch": 32, "width": 1024}),
    ],
)
def test_experiments_on_the_gpu(exp_id, params):
    if not _has_gpu():
        pytest.skip("needs a GPU")
    from gpulab.experiments.inline import run_job

    events: list[dict] = []
    final = run_job("g", exp_id, params, _inventory(), events.append, quick=True)
    assert final == "result", events[-1]
    result = events[-1]["result"]
    assert result["verdicts"] and all(v["passed"] for v in result["verdicts"]), result["verdicts"]
    from gpulab.experiments import registry

    ran = {m["contender"] for m in result["measurements"]}
    assert ran == {c.id for c in registry.get(exp_id).contenders if c.backend == "torch-cuda"}
    print(exp_id, result["summary"])


def _chain(x, w):
    import torch

    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


def test_compile_fused_compiles_its_dynamic_graph_at_the_large_input():
    """The size a dynamic graph is compiled at is the one Inductor tunes its kernels for: the
    large input comes right after n=1 (which torch.compile always specializes), so the graph that
    runs hot is tuned for it. On an H200 the graph compiled at n=33 ran the 32M input at 0.38 ms,
    compiled there at 0.15 ms (bench/results/probe-compile-fused-order-h200.log)."""
    import numpy as np
    import torch

    from gpulab.exercises import api
    from gpulab.exercises.run_check import loaded_check

    def compiled_at(seen, dynamic):
        def backend(gm, example_inputs):
            from torch._inductor.compile_fx import compile_fx

            seen.append(max(t.shape[0] for t in example_inputs if isinstance(t, torch.Tensor)))
            return compile_fx(gm, example_inputs)

        return torch.compile(_chain, backend=backend, dynamic=dynamic)

    ex = CATALOG.get("compile-fused")
    for dynamic in (None, False):
        torch._dynamo.reset()
        seen: list[int] = []
        fn = compiled_at(seen, dynamic)
        with loaded_check(ex) as check:
            ctx = api.Context(
                rng=np.random.default_rng(5), seed=5, gpu=False, cupy=False, device="cpu"
            )
            verdicts = []
            for case in check.cases(ctx):
                got = check.run(fn, case, ctx)
                want = check.expected(case, ctx)
                verdicts.append((case.name, check.compare(want, got, case, ctx)))
                if dynamic is False and len(seen) == 3:
                    break  # the third graph is named; the rest would only add more
        sizes = [int(name.split("n=")[1].split(",")[0]) for name, _ in verdicts]
        assert sizes[:3] == [1, 1 << 20, 33], sizes
        if dynamic is None:  # the default: static at n=1, then dynamic, compiled at 1M
            assert seen == [1, 1 << 20] and all(v is None for _, v in verdicts), verdicts
        else:  # a graph per size: named at the third size, not after the timed one
            assert seen == [1, 1 << 20, 33], seen
            name, bad = verdicts[-1]
            assert (
                name == "n=33"
                and bad is not None
                and "recompiled for every new shape" in bad.message
            )


def test_compile_fused_draws_its_large_input_on_the_device():
    """On a GPU the 32M-element input is drawn on the device from a seed the case carries (on the
    host it was half of a repeat check's second on an H200): same seed, same values; the values
    in the ranges the host's cases use; the case holds no large array to copy per call."""
    import numpy as np

    from gpulab.exercises import api
    from gpulab.exercises.run_check import loaded_check

    ex = CATALOG.get("compile-fused")
    with loaded_check(ex) as check:

        def speed_case(seed):
            ctx = api.Context(
                rng=np.random.default_rng(seed), seed=seed, gpu=True, cupy=False, device="cpu"
            )
            return next(c for c in check.cases(ctx) if c.meta.get("speed"))

        case = speed_case(5)
        assert set(case.args) == {"n", "seed"} and case.args["n"] == 1 << 25
        x, w = check._inputs(case, "cpu")
        again, _ = check._inputs(speed_case(5), "cpu")
        other, _ = check._inputs(speed_case(6), "cpu")
    assert x.shape == w.shape == (1 << 25,) and str(x.dtype) == "torch.float32"
    assert -3 <= float(x.min()) < -2.99 and 2.99 < float(x.max()) < 3
    assert 0.5 <= float(w.min()) < 0.51 and 1.99 < float(w.max()) < 2
    assert bool((x == again).all()) and not bool((x == other).all())


def test_compile_fused_sizes_its_speed_input_by_the_free_memory(monkeypatch):
    """The speed input grows from 32M to 128M elements where a quarter of the free memory holds
    the rounds, so a call's host work (guards, a few eager ops on the scale) weighs little beside
    its kernels; the calls a round shrink as it grows, keeping a round's work about the same."""
    import numpy as np
    import torch

    from gpulab.exercises import api
    from gpulab.exercises.run_check import loaded_check

    ex = CATALOG.get("compile-fused")
    free = [0]
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free[0], 141 << 30))
    with loaded_check(ex) as check:

        def size(free_bytes, device="cuda:0"):
            free[0] = free_bytes
            ctx = api.Context(
                rng=np.random.default_rng(1), seed=1, gpu=True, cupy=False, device=device
            )
            case = next(c for c in check.cases(ctx) if c.meta.get("speed"))
            return case.args["n"]

        assert size(139 << 30) == 1 << 27  # an H200
        assert size(12 << 30) == 1 << 26
        assert size(6 << 30) == 1 << 25  # a laptop's card: the size it always had
        assert size(1 << 30) == 1 << 25  # never below it
        assert size(139 << 30, device="cpu") == 1 << 25  # no device to ask
        assert [check.round_calls(1 << k) for k in (25, 26, 27)] == [20, 10, 5]


def test_compile_fused_stops_a_round_once_the_learners_calls_have_taken_their_budget(monkeypatch):
    """A file far slower than eager (wrong/eager-in-small-slices.py took 1 s a call, 139 s of
    seven rounds on an H200) stops its round once its calls have taken ROUND_BUDGET_S, and the
    call that crossed it is the one compared when the chosen one was still to come. The clock is
    a stand-in that each call moves on: nothing here waits."""
    import types

    import torch

    from gpulab.exercises.run_check import loaded_check

    ex = CATALOG.get("compile-fused")
    with loaded_check(ex) as check:
        clock = [0.0]
        monkeypatch.setattr(check, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
        x = torch.linspace(-3, 3, 64)
        w = torch.linspace(0.5, 2, 64)
        seen = []

        def slow(x_, w_, right=True):
            clock[0] += 0.3
            seen.append(1)
            return check._eager(x_, w_) if right else torch.zeros_like(x_)

        mean, wrong, spent = check._time(
            functools.partial(slow, right=False), x, w, False, 20, lambda _x: None, 10, 1.0
        )
        assert (len(seen), spent, wrong is not None) == (4, True, True)
        assert abs(mean - 0.3) < 1e-9
        seen.clear()
        mean, wrong, spent = check._time(slow, x, w, False, 20, lambda _x: None, 1, 1.0)
        assert (len(seen), spent, wrong) == (4, True, None)
        seen.clear()
        mean, wrong, spent = check._time(slow, x, w, False, 5, lambda _x: None, 2)
        assert (len(seen), spent, wrong) == (5, False, None)
        assert check.ROUND_BUDGET_S >= 20 * 0.05  # 50 ms a call and slower is past it only
