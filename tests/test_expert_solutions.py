"""The expert solutions of the kernel exercises (expert.py beside solution.py) without a GPU.

Each is compiled with NVRTC for the H100 and run through the engine's own grader on the CUDA
emulator, as the references are in tests/test_kernel_track.py: it must pass every case
(guards, OWN_KERNEL, shared memory where required), and its timed path must pass the grader's
check of every timed call. The statement's grades are anchored on its measured figure: gold is
0.85 of what the expert solution reached. Its speed on a GPU is tests/test_expert_solutions_gpu.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
from test_kernel_track import (
    _EXERCISES,
    IDS,
    KERNELS,
    _ctx,
    _emulate_timer,
    _front,
    _grade,
    _load,
    _sources,
)

from gpulab.emulator import cuda, toolchain
from gpulab.testing import fake_cupy, nvrtc


@pytest.fixture(scope="module")
def _emulated_experts() -> None:
    if toolchain.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    cuda.prebuild([code for f in KERNELS for code, _ in _sources(f, [f / "expert.py"]).values()])


@pytest.fixture
def cupy_fake(monkeypatch: pytest.MonkeyPatch, _emulated_experts: None) -> ModuleType:
    return fake_cupy.install(monkeypatch)


def _cuda_c_exercises() -> list[Path]:
    """Every catalog folder whose check wants the learner's own kernel, written in CUDA C (the
    Triton exercises declare OWN_KERNEL too, and need triton, not cupy)."""
    return [
        ex.folder
        for ex in _EXERCISES.values()
        if re.search(
            r'^OWN_KERNEL = (True\b|"raw"|\("\w+")', (ex.folder / "check.py").read_text(), re.M
        )
        and "cupy" in ex.needs
    ]


def test_every_kernel_exercise_has_an_expert_solution() -> None:
    wanted = _cuda_c_exercises()
    assert len(wanted) >= 21
    assert sorted(KERNELS) == sorted(wanted), "the kernel track's list misses a CUDA C exercise"
    for folder in KERNELS:
        ex = _EXERCISES[folder.name]
        assert ex.expert_path == folder / "expert.py"
        assert ex.expert_path.is_file(), f"{folder.name}: no expert.py"
        text = ex.expert_path.read_text()
        if text.startswith("# rung: "):  # the top of the exercise's ladder says its idea first
            text = text.split("\n", 1)[1]
        assert text.startswith('"""Expert'), f"{folder.name}: the docstring says what it does"


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_expert_compiles_for_the_h100(folder: Path) -> None:
    if nvrtc.available() is None:
        pytest.skip("neither NVRTC nor nvcc is installed")
    sources = _sources(folder, [folder / "expert.py"])
    assert sources, f"{folder.name}/expert.py builds no RawKernel"
    errors = {}
    for key, (code, name) in sources.items():
        assert re.search(
            rf'extern\s+"C"\s+__global__\s+void\s+(__launch_bounds__\([^)]*\)\s*)?{name}\s*\(', code
        ), key
        log = nvrtc.compile_errors(code)
        if log:
            errors[key] = log
    assert not errors, "\n".join(f"{k}:\n{v}" for k, v in errors.items())


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_expert_passes_its_check_on_the_emulator(folder: Path, cupy_fake: ModuleType) -> None:
    """Every case, two seeds: guards, inputs untouched, OWN_KERNEL, shared memory if required."""
    for seed in (7, 8):
        bad = _grade(folder, folder / "expert.py", seed)
        assert bad is None, f"{folder.name}/expert.py: {bad}"


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_expert_timed_calls_are_checked_and_right(folder: Path, cupy_fake: ModuleType) -> None:
    """The timing's own inputs (sizes the cases do not use), each timed call checked against the
    library's answer, as the grader does on a GPU."""
    check = _load(folder / "check.py")
    spec = check.timing(getattr(_load(folder / "expert.py"), check.ENTRY), _ctx())
    assert _emulate_timer(spec, 4) is None


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_grades_are_fractions_of_the_expert_timed_beside_the_learner(folder: Path) -> None:
    """Gold asks for 0.85 of the expert's speed measured in the same check on the learner's own
    GPU; no exercise carries a figure measured on one card (the old `expert:` anchor)."""
    from gpulab.exercises import yardstick

    meta = _front(folder)
    assert "expert" not in meta
    g = meta["grades"]
    assert g["gold"] == 0.85 and 0 < g["bronze"] < g["silver"] < g["gold"]
    choice = yardstick.choose(_EXERCISES[folder.name])
    assert choice.label == "expert" and choice.path == folder / "expert.py"


def _run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from gpulab.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_shows_the_expert_solution_at_gold_or_with_force(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from gpulab.ex.commands import store
    from gpulab.exercises.progress import Progress

    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    ex = _EXERCISES["31-matmul-tiled"]
    expert_text = ex.expert_path.read_text()
    code, _, err = _run_cli(capsys, "ex", "solution", "matmul-tiled", "--expert")
    assert code != 0 and "opens at gold (yours: not passed)" in err and "--force" in err
    code, out, _ = _run_cli(capsys, "ex", "solution", "matmul-tiled", "--expert", "--force")
    assert code == 0 and expert_text in out
    assert "our expert solution is timed beside yours in every check" in out  # no record yet
    with store() as st:
        Progress(st).record("matmul-tiled", "pass", seed=1, grade="silver", fraction=0.5)
    code, out, err = _run_cli(capsys, "ex", "solution", "matmul-tiled")
    assert code == 0 and "--expert" not in out  # the reference; the expert's is not offered yet
    code, _, err = _run_cli(capsys, "ex", "solution", "matmul-tiled", "--expert")
    assert code != 0 and "(yours: silver)" in err
    with store() as st:
        Progress(st).record("matmul-tiled", "pass", seed=2, grade="gold", fraction=0.8)
    code, out, _ = _run_cli(capsys, "ex", "solution", "matmul-tiled")
    assert code == 0 and "gpulab ex solution matmul-tiled --expert" in out
    code, out, _ = _run_cli(capsys, "ex", "solution", "matmul-tiled", "--expert", "--json")
    data = json.loads(out)
    assert data["text"] == expert_text and data["best_grade"] == "gold"
    assert data["yardstick"] is None and data["path"].endswith("expert.py")
    code, _, err = _run_cli(capsys, "ex", "solution", "vector-add", "--expert", "--force")
    assert code != 0 and "has no expert solution" in err


def test_schema_refuses_a_gold_below_the_yardstick_line(tmp_path: Path) -> None:
    from gpulab.exercises.exercise_format import ExerciseFormatError, validate_meta

    meta = {
        "id": "x",
        "title": "X",
        "order": 1,
        "lesson": "l",
        "needs": "cupy",
        "metric": "GB/s",
        "grades": {"bronze": 0.2, "silver": 0.5, "gold": 0.7},
        "hints": ["h"],
    }
    with pytest.raises(ExerciseFormatError, match="gold 0.7 is below 0.85"):
        validate_meta(meta, tmp_path / "exercise.md")
    meta["grades"]["gold"] = 0.85
    assert validate_meta(meta, tmp_path / "exercise.md")["grades"]["gold"] == 0.85
    with pytest.raises(ExerciseFormatError, match="fraction of the yardstick's speed, 0 to 1"):
        validate_meta({**meta, "grades": {"bronze": 0.2, "silver": 0.5, "gold": 1.2}}, tmp_path)
    with pytest.raises(ExerciseFormatError, match="unknown key"):
        validate_meta({**meta, "expert": 0.9}, tmp_path / "exercise.md")
