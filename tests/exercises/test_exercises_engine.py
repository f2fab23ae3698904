"""The exercise engine on the CPU: catalog validation, workspace, the grader's honesty, progress.

Uses the test-only exercises under tests/fixtures/exercises (NumPy only: milliseconds a check).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from gpulab.exercises import api
from gpulab.exercises.exercise_format import ExerciseFormatError
from gpulab.exercises.loader import UnknownExercise, load_catalog
from gpulab.exercises.progress import FAILING, NOT_STARTED, PASSING, Progress
from gpulab.exercises.run_check import run_check
from gpulab.exercises.workspace import Workspace
from gpulab.store.database import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exercises"


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FIXTURES)


@pytest.fixture
def double(cat):
    return cat.get("double")


def ctx(seed: int = 5) -> api.Context:
    return api.Context(
        rng=np.random.default_rng(seed), seed=seed, gpu=False, cupy=False, device="cpu", quick=True
    )


def check(ex, path: Path, seed: int = 5):
    return run_check(ex, path, seed, ctx(seed))


def learner(tmp_path: Path, text: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- catalog -------------------------------------------------------------------------------------


def test_fixture_catalog_loads(cat):
    assert [e.id for e in cat] == ["double", "gpu-only"]
    ex = cat.get("double")
    assert ex.entry == "double" and ex.timed and ex.time_limit == 20
    assert ex.graded_by_speed and ex.ceiling == "copy"
    assert ex.intensity is not None and ex.intensity.per_byte == 1 / 8
    assert not cat.get("gpu-only").graded_by_speed and cat.get("gpu-only").ceiling == ""
    assert {w.name: w.expect for w in ex.wrong} == {
        "skips-last": "never written",
        "triples": "expected",
    }
    assert cat.get("901") is ex and cat.get("901-double") is ex and cat.get("901_double") is ex


def test_unknown_exercise_suggests_a_name(cat):
    with pytest.raises(UnknownExercise) as err:
        cat.get("dubble")
    assert "did you mean 'double'" in str(err.value)


def _broken(tmp_path: Path, edit) -> Path:
    root = tmp_path / "cat"
    shutil.copytree(FIXTURES / "901-double", root / "901-double")
    edit(root / "901-double")
    return root


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("edit", "file", "words"),
    [
        (
            lambda d: _replace(d / "exercise.md", "order: 901", "order: 902"),
            "exercise.md",
            "order 902 differs",
        ),
        (
            lambda d: _replace(d / "exercise.md", "id: double", "id: Double"),
            "exercise.md",
            "lower-case",
        ),
        (
            lambda d: _replace(d / "exercise.md", "needs: cpu", "needs: tpu"),
            "exercise.md",
            "needs 'tpu'",
        ),
        (
            lambda d: _replace(d / "exercise.md", "bronze: 0.3", "bronze: 0.7"),
            "exercise.md",
            "must rise",
        ),
        (
            lambda d: _replace(d / "exercise.md", "metric: GB/s", "metric: GFLOPS"),
            "exercise.md",
            "metric",
        ),
        (lambda d: _replace(d / "exercise.md", "hints:", "hint:"), "exercise.md", "unknown key"),
        (
            lambda d: _replace(d / "exercise.md", "title: Double", "title: [Double"),
            "exercise.md",
            "not valid YAML",
        ),
        (lambda d: (d / "solution.py").unlink(), "solution.py", "missing"),
        (
            lambda d: _replace(d / "check.py", "def expected(", "def expectd("),
            "check.py",
            "does not define expected",
        ),
        (
            lambda d: _replace(d / "check.py", 'ENTRY = "double"', "ENTRY = 3"),
            "check.py",
            "ENTRY must be",
        ),
        (lambda d: _replace(d / "check.py", "def run(fn", "def run(fn,,"), "check.py", "line"),
        (
            lambda d: _replace(d / "starter.py", "def double(", "def dbl("),
            "starter.py",
            "does not define double()",
        ),
        (
            lambda d: _replace(d / "wrong" / "triples.py", "# expect: expected", "# wrong"),
            "triples.py",
            "# expect:",
        ),
        (
            lambda d: _replace(d / "check.py", 'metric="GB/s"', 'metric="TFLOP/s"'),
            "check.py",
            "times in TFLOP/s, but exercise.md's metric is GB/s",
        ),
        (
            lambda d: _replace(d / "check.py", 'ceiling="copy"', 'ceiling="hbm"'),
            "check.py",
            "ceiling 'hbm' is not",
        ),
        (
            lambda d: _replace(
                d / "exercise.md", "intensity: {flops: 1, bytes: 8", "intensity: 1 #"
            ),
            "exercise.md",
            "intensity must be {flops",
        ),
        (
            lambda d: _replace(d / "exercise.md", "bytes: 8,", "bytes: 0,"),
            "exercise.md",
            "intensity.bytes must be above 0",
        ),
    ],
)
def test_a_broken_folder_names_the_file(tmp_path, edit, file, words):
    root = _broken(tmp_path, edit)
    with pytest.raises(ExerciseFormatError) as err:
        load_catalog(root)
    assert err.value.source.endswith(file), err.value
    assert words in str(err.value)


def test_duplicate_ids_and_bad_folder_names(tmp_path):
    root = _broken(tmp_path, lambda d: None)
    shutil.copytree(root / "901-double", root / "905-double")
    _replace(root / "905-double" / "exercise.md", "order: 901", "order: 905")
    with pytest.raises(ExerciseFormatError, match="id 'double' is also"):
        load_catalog(root)
    shutil.rmtree(root / "905-double")
    (root / "double").mkdir()
    with pytest.raises(ExerciseFormatError, match="named NN-id"):
        load_catalog(root)


# --- workspace -----------------------------------------------------------------------------------


def test_workspace_create_reset_backup(tmp_path, double):
    ws = Workspace(tmp_path / "ws")
    path = ws.ensure(double)
    assert path.name == "901_double.py"
    assert path.read_text() == double.starter_path.read_text()
    assert ws.untouched(double)
    path.write_text("def double(x, out):\n    out[:] = 2 * x\n")
    assert ws.ensure(double) == path and "2 * x" in path.read_text()  # never overwritten
    same, backup = ws.reset(double)
    assert same == path and backup is not None
    assert backup.read_text() == "def double(x, out):\n    out[:] = 2 * x\n"
    assert path.read_text() == double.starter_path.read_text()
    _, again = ws.reset(double)
    assert again is None  # it was the starter: nothing to keep
    path.write_text("# second try\n")
    _, second = ws.reset(double)
    assert second is not None and second != backup and len(ws.backups(double)) == 2


def test_workspace_from_env_and_bad_root(tmp_path, monkeypatch, double):
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "from-env"))
    assert Workspace().root == tmp_path / "from-env"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    from gpulab.exercises.workspace import WorkspaceError

    with pytest.raises(WorkspaceError, match="is a file"):
        Workspace(blocker).ensure(double)


def test_outside_edits_are_detected_by_content(tmp_path, double):
    ws = Workspace(tmp_path)
    path = ws.ensure(double)
    assert not ws.edited_outside(double)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))  # touched, same text
    assert not ws.edited_outside(double)
    path.write_text(path.read_text() + "# edited in vim\n")
    assert ws.edited_outside(double)
    ws.mark_seen(double)
    assert not ws.edited_outside(double)
    path.unlink()
    assert ws.edited_outside(double)


# --- the grader ----------------------------------------------------------------------------------


def test_solution_passes_with_a_timing(double):
    result = check(double, double.solution_path)
    assert result.passed, result.message
    assert [c.passed for c in result.cases] == [True] * 4
    t = result.timing
    assert t["learner"]["value"] > 0 and t["library"]["name"] == "np.multiply"
    assert t["ceiling"]["value"] and t["fraction"] == pytest.approx(
        t["learner"]["value"] / t["ceiling"]["value"]
    )
    assert t["device_state"]["na"].startswith("CPU mode")
    assert result.grade in ("pass", "bronze", "silver", "gold")


def test_unwritten_output_is_caught_by_the_poison(double):
    result = check(double, double.wrong[0].path)
    assert not result.passed and result.kind == "wrong"
    assert result.failed_case == "n=1" and result.index == 0
    assert "out[0] = nan" in result.message and "never written" in result.message


def test_a_wrong_value_names_index_expected_and_got(tmp_path, double):
    path = learner(
        tmp_path,
        "def double(x, out):\n    out[:] = 2 * x\n    if out.size > 20:\n        out[20] += 1\n",
    )
    result = check(double, path)
    assert result.failed_case == "n=33" and result.index == 20
    assert result.got == pytest.approx(result.expected + 1)
    assert "1 of 33 wrong" in result.message


def test_each_check_loads_the_files_current_text_under_a_new_name(tmp_path, double):
    names = tmp_path / "names.txt"
    body = f"open({str(names)!r}, 'a').write(__name__ + '\\n')\n"
    path = learner(tmp_path, body + "def double(x, out):\n    out[:] = 3 * x\n")
    assert not check(double, path).passed
    path.write_text(body + "def double(x, out):\n    out[:] = 2 * x\n")
    assert check(double, path).passed
    first, second = names.read_text().split()
    assert first != second
    assert first not in sys.modules and second not in sys.modules


def test_patching_numpy_cannot_flip_the_verdict(tmp_path, double):
    path = learner(
        tmp_path,
        "import numpy as np\n"
        "import gpulab.exercises.api as api\n"
        "np.abs = lambda x: x * 0\n"
        "np.isfinite = lambda x: np.ones(np.shape(x), bool)\n"
        "np.allclose = lambda *a, **k: True\n"
        "np.array_equal = lambda *a, **k: True\n"
        "def double(x, out):\n"
        "    np.argmax = lambda *a, **k: 0\n"
        "    out[:] = 3 * x\n",
    )
    real_abs, real_compare = np.abs, api.compare_arrays
    result = check(double, path)
    assert not result.passed and "expected" in result.message
    assert np.abs is real_abs and "numpy.abs" in result.restored  # put back
    # the grader's own comparison rebound: put back, and the check fails on it by itself
    path = learner(
        tmp_path,
        "import gpulab.exercises.api as api\n"
        "api.compare_arrays = lambda *a, **k: None\n"
        "def double(x, out):\n"
        "    out[:] = 2 * x\n",
    )
    result = check(double, path)
    assert not result.passed and "the grader's own code is not yours" in result.message
    assert api.compare_arrays is real_compare
    assert "gpulab.exercises.api.compare_arrays" in result.restored


def test_the_case_handed_to_the_learner_is_a_copy(tmp_path, double):
    # The fixture's run() passes the case's own arrays; the grader's copy protects them, so the
    # check's compare() still sees the original inputs (it raises if they changed).
    path = learner(tmp_path, "def double(x, out):\n    x[:] = 0\n    out[:] = 2 * x\n")
    result = check(double, path)
    assert result.kind == "wrong" and "expected" in result.message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "def double(x, out):\n    raise ValueError('bad shape')\n",
            "ValueError: bad shape (line 2 of mine.py)",
        ),
        ("import sys\ndef double(x, out):\n    sys.exit(3)\n", "SystemExit: 3 (line 3 of mine.py)"),
        ("def double(x, out)\n    pass\n", "syntax error in mine.py (line 1"),
        ("import no_such_module_here\n", "importing mine.py raised ModuleNotFoundError"),
        ("def dbl(x, out):\n    pass\n", "does not define double()"),
        ("double = 3\n", "is a int, not a function"),
    ],
)
def test_learner_errors_are_failed_checks_in_one_line(tmp_path, double, text, words):
    result = check(double, learner(tmp_path, text))
    assert not result.passed and result.kind == "error"
    assert words in result.message and "\n" not in result.message


def test_a_solution_that_only_works_at_the_checked_sizes_fails_timing(tmp_path, double):
    path = learner(
        tmp_path,
        "def double(x, out):\n    if x.size > 70000:\n        return\n    out[:] = 2 * x\n",
    )
    result = check(double, path)
    assert not result.passed and "after the timed calls" in result.message


def test_seeds_replay_the_same_inputs(double):
    a = api.Context(rng=np.random.default_rng(9), seed=9, gpu=False, cupy=False, device="cpu")
    b = api.Context(rng=np.random.default_rng(9), seed=9, gpu=False, cupy=False, device="cpu")
    from gpulab.exercises.run_check import load_check

    mod = load_check(double)
    xa = [c.args["x"] for c in mod.cases(a)]
    xb = [c.args["x"] for c in mod.cases(b)]
    assert all(np.array_equal(p, q) for p, q in zip(xa, xb, strict=True))
    assert not (xa[0] == 0).any()


def test_grade_thresholds():
    from gpulab.exercises.speed import grade_for

    grades = {"bronze": 0.4, "silver": 0.6, "gold": 0.8}
    assert [grade_for(f, grades) for f in (None, 0.1, 0.4, 0.79, 0.8, 1.2)] == [
        "pass",
        "pass",
        "bronze",
        "silver",
        "gold",
        "gold",
    ]


# --- progress ------------------------------------------------------------------------------------


def test_progress_and_hints_survive_a_new_store(tmp_path):
    db = tmp_path / "p.sqlite3"
    with Store(db) as st:
        p = Progress(st)
        assert p.get("double").state == NOT_STARTED
        assert p.record("double", "fail", seed=1, kind="wrong", message="out[0]").state == FAILING
        p.record("double", "pass", seed=2, grade="silver", fraction=0.65)
        p.record("double", "pass", seed=3, grade="bronze", fraction=0.45)  # best stays silver
        assert p.reveal_hint("double", 2) == 1
        assert p.reveal_hint("double", 2) == 2
        assert p.reveal_hint("double", 2) == 2  # no more than there are
        assert p.reveal_hint("other", 3) == 1
    with Store(db) as st:
        p = Progress(st)
        got = p.get("double")
        assert (got.state, got.best_grade, got.best_fraction) == (PASSING, "silver", 0.65)
        assert got.passed_ever and got.hints_revealed == 2 and got.attempts == 3
        assert [a.seed for a in p.attempts("double")] == [3, 2, 1]
        assert p.attempts("double")[-1].verdict == "fail"
        p.record("double", "fail", seed=4)
        after = p.get("double")
        assert after.state == FAILING and after.passed_ever and after.best_grade == "silver"
        assert p.get("other").state == NOT_STARTED and p.get("other").hints_revealed == 1


def test_a_timing_above_the_ceiling_earns_no_grade(tmp_path, double):
    # Claims every call took a nanosecond: the perf_counter it patches is put back before the
    # timer reads it, and a figure far above the calibrated ceiling would not be graded anyway.
    path = learner(
        tmp_path,
        "import time\n"
        "_real = time.perf_counter\n"
        "def double(x, out):\n"
        "    out[:] = 2 * x\n"
        "    time.perf_counter = lambda: 0.0\n",
    )
    result = check(double, path)
    assert result.passed
    assert "time.perf_counter" in result.restored
    assert result.timing["learner"]["median_s"] > 0
    assert result.timing["fraction"] < 1.5 or result.timing["grade"] == "pass"


def test_find_reads_one_folder_and_agrees_with_the_catalog(monkeypatch, cat):
    from gpulab.exercises import loader as catalog_mod

    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(FIXTURES))
    for name in ("double", "901", "901-double", "901_double", "901_double.py"):
        assert catalog_mod.find(name).folder == cat.get("double").folder
    with pytest.raises(UnknownExercise, match="did you mean 'double'"):
        catalog_mod.find("doubel")


@pytest.mark.parametrize(
    ("variant", "has_temp", "words"),
    [("full", True, ""), ("no-library", False, "libnvidia-ml.so"), ("gpu-lost", False, "lost")],
)
def test_gpu_state_reads_nvml_or_says_why_not(variant, has_temp, words):
    from gpulab.core.devices import DeviceInfo, Inventory
    from gpulab.telemetry.nvml import NvmlSession
    from gpulab.telemetry.window import gpu_state
    from gpulab.testing.fake_nvml import FakeNvml

    fake = FakeNvml(variant)
    inv = Inventory(devices=[DeviceInfo(index=0, name="fake", kind="cuda")])
    state = gpu_state(inv, 0, nvml=NvmlSession(nvml=fake))
    assert (state["temperature_c"] is not None) == has_temp
    assert (state["sm_clock_mhz"] is not None) == has_temp
    assert words in state["na"] and (has_temp or state["na"])


def test_an_exception_in_the_timed_run_is_a_failed_check(tmp_path, double):
    path = learner(
        tmp_path,
        "def double(x, out):\n    if x.size > 70000:\n        raise MemoryError('too big')\n"
        "    out[:] = 2 * x\n",
    )
    from gpulab.exercises.run_check import LearnerCrash

    with pytest.raises(LearnerCrash) as err:  # out of memory: the worker must free what it holds
        check(double, path)
    assert err.value.kind == "out-of-memory"
    assert err.value.extra["check"]["kind"] == "crash"
    path.write_text(path.read_text().replace("MemoryError('too big')", "ValueError('too big')"))
    result = check(double, path)
    assert not result.passed and result.kind == "error"
    assert result.message.startswith("timed run: double raised ValueError: too big (line 3")


def test_the_check_job_is_hidden_but_resolvable(monkeypatch):
    from gpulab.ex import commands as ex_commands
    from gpulab.exercises.job import EXPERIMENT_ID, check_inline
    from gpulab.experiments.registry import all_experiments, get

    assert EXPERIMENT_ID not in all_experiments() and get(EXPERIMENT_ID).id == EXPERIMENT_ID
    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(FIXTURES))
    inv = ex_commands.cpu_only("no GPU in this test")
    result, events = check_inline("gpu-only", "/nowhere.py", 3, quick=True, inventory=inv)
    assert result.kind == "unavailable" and "needs a GPU: no GPU in this test" in result.message
    result, _ = check_inline("no-such", "/nowhere.py", 3, quick=True, inventory=inv)
    assert not result.passed and "unknown exercise 'no-such'" in result.message
    result, events = check_inline(
        "double", str(FIXTURES / "901-double" / "solution.py"), 3, quick=True, inventory=inv
    )
    assert result.passed
    kinds = [e["type"] for e in events]
    assert kinds[0] == "accepted" and kinds[-1] == "result" and "progress" in kinds
    rows = [e["row"]["contender"] for e in events if e["type"] == "measurement"]
    assert rows == ["your code", "library: np.multiply"]


def test_a_wrong_sweep_stops_at_the_first_wrong_case_with_the_same_verdict(monkeypatch):
    """first_failure (the tests' and the bench's sweeps of wrong/ files) runs no case after the
    first wrong one and gives the verdict and message the whole check gives; a learner's check
    runs every case, so the panel shows each row."""
    from gpulab.ex import commands as ex_commands
    from gpulab.exercises.job import check_inline

    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(FIXTURES))
    inv = ex_commands.cpu_only("no GPU in this test")
    wrong = str(FIXTURES / "901-double" / "wrong" / "triples.py")
    whole, _ = check_inline("double", wrong, 3, quick=True, inventory=inv)
    first, _ = check_inline("double", wrong, 3, quick=True, inventory=inv, first_failure=True)
    assert [r.passed for r in whole.cases] == [False] * len(whole.cases)
    assert [r.passed for r in first.cases] == [False] + [None] * (len(first.cases) - 1)
    assert (first.verdict, first.kind, first.message) == (whole.verdict, whole.kind, whole.message)
    right = str(FIXTURES / "901-double" / "solution.py")
    passed, _ = check_inline("double", right, 3, quick=True, inventory=inv, first_failure=True)
    assert passed.passed and all(r.passed for r in passed.cases)


@pytest.mark.uncalibrated
def test_a_check_that_must_calibrate_says_so_first_and_only_once(monkeypatch):
    """The ceiling is measured once per device; the check that pays for it says why it waits."""
    from gpulab.ex import commands as ex_commands
    from gpulab.exercises.job import check_inline

    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(FIXTURES))
    inv = ex_commands.cpu_only("no GPU in this test")
    solution = str(FIXTURES / "901-double" / "solution.py")

    def said(events):
        return [
            e["message"] for e in events if e["type"] == "progress" and "calibrat" in e["message"]
        ]

    first, events = check_inline("double", solution, 3, quick=True, inventory=inv)
    assert first.passed and said(events) == [
        "calibrating this device's ceilings (once; later checks reuse them)"
    ]
    again, events = check_inline("double", solution, 4, quick=True, inventory=inv)
    assert again.passed and said(events) == []


def test_a_file_that_leaves_work_running_retires_its_worker():
    """A file whose thread still runs after it loaded is refused, and its result asks the worker
    to retire: the thread would otherwise keep running beside the next check. torch.jit.fork
    from Python is refused before it starts anything, so that file's worker may stay, as may a
    plain file's."""
    pytest.importorskip("torch")
    ex = load_catalog().get("vector-add")

    def check(path: Path):
        ctx = api.Context(
            rng=np.random.default_rng(3), seed=3, gpu=False, cupy=False, device="cpu", quick=True
        )
        return run_check(ex, path, 3, ctx)

    left = check(ex.folder / "wrong" / "raw-thread-at-import.py")
    assert "started a thread when it was loaded" in left.message and left.retire, left.message
    assert left.to_dict()["retire"] == left.retire
    fork = check(ex.folder / "wrong" / "interop-hogs.py")
    assert fork.verdict == "fail" and "started a thread when it was loaded" in fork.message
    assert "torch.jit.fork" in fork.message and fork.retire == "", fork
    good = check(ex.solution_path)
    assert good.verdict == "pass" and good.retire == "", good.message


def test_threads_that_kept_an_inherited_name_are_not_taken_for_the_learners(monkeypatch):
    """A thread that never named itself carries its creator's name: the main thread's now, or the
    process's name where a torch build renamed the main thread at import (on an H200, torch
    2.11: OpenMP's pool threads named like the program were left by our own references). Those
    are not counted; a thread that named itself (gloo's) is, whatever the main thread is called."""
    from gpulab.exercises import sandbox

    main = threading.main_thread().native_id
    program = os.path.basename(sys.executable)[:15]
    before = {main: "pt_main_thread"}

    def table(**new):
        rows = {main: "pt_main_thread"}
        rows.update({10_000_000 + i: name for i, name in enumerate(new.values())})
        return rows

    monkeypatch.setattr(sandbox, "native_threads", lambda: table(a=program, b="pt_main_thread"))
    assert sandbox.foreign_threads(before) == []
    monkeypatch.setattr(sandbox, "native_threads", lambda: table(a=program, b="gloo:-1"))
    assert sandbox.foreign_threads(before) == ["gloo:-1"]
    monkeypatch.setattr(sandbox, "native_threads", lambda: table(a="cuda-EvtHandlr", b="my-worker"))
    assert sandbox.foreign_threads(before) == ["my-worker"]
