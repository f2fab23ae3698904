"""`gpulab ex`: exit codes, one-line errors, --json shapes, and the watch loop driven by edits.

Checks run in this process (--inline --quick) on the test-only exercises; the worker path has its
own tests (test_exercises_worker.py). The machine is CPU-only here whatever the host has, so
the GPU-only fixture reads "needs a GPU" everywhere.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from gpulab.cli import main
from gpulab.core.doc_tags import tag
from gpulab.ex import cli as ex_cli
from gpulab.ex import commands as ex_commands

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exercises"


@pytest.fixture(autouse=True)
def _setup(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(FIXTURES))
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setattr(ex_cli, "machine", lambda: ex_commands.cpu_only("no GPU in this test"))
    monkeypatch.setattr(ex_commands, "machine", lambda: ex_commands.cpu_only("no GPU in this test"))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code, out, err = run(capsys, *argv, "--json")
    data = json.loads(out)
    assert data.pop("schema") == tag("exercises")  # every document says what it is
    return code, data


def test_list_creates_files_and_says_what_needs_a_gpu(capsys, tmp_path):
    code, out, _ = run(capsys, "ex")
    assert code == 0
    assert "double" in out and "needs a GPU: no GPU in this test" in out
    assert (tmp_path / "work" / "901_double.py").is_file()
    assert not (tmp_path / "work" / "902_gpu_only.py").exists()  # cannot run here: no file
    code, data = run_json(capsys, "exercises")
    rows = {r["id"]: r for r in data["exercises"]}
    assert data["workspace"] == str(tmp_path / "work")
    assert rows["double"]["state"] == "not started" and rows["double"]["available"]
    assert rows["gpu-only"]["unavailable"].startswith("needs a GPU")
    orders = [r["order"] for r in data["exercises"]]
    assert orders == sorted(orders)


def test_check_fails_then_passes_and_progress_is_listed(capsys, tmp_path):
    run(capsys, "ex")
    code, data = run_json(capsys, "ex", "check", "double", "--inline", "--quick", "--seed", "11")
    assert code == 1
    assert data["check"]["verdict"] == "fail" and data["check"]["seed"] == 11
    assert "NotImplementedError" in data["check"]["message"]
    assert data["replay"] == "gpulab ex check double --seed 11"
    assert data["progress"]["state"] == "failing"
    mine = tmp_path / "work" / "901_double.py"
    mine.write_text((FIXTURES / "901-double" / "solution.py").read_text())
    code, out, _ = run(capsys, "ex", "check", "901", "--inline", "--quick")
    assert code == 0 and out.startswith("PASS  double")
    assert "np.multiply" in out and "of the copy ceiling" in out
    _, data = run_json(capsys, "ex")
    row = next(r for r in data["exercises"] if r["id"] == "double")
    assert row["state"] == "passing" and row["attempts"] == 2 and row["best_grade"]


def test_check_predict_shows_the_prediction_beside_the_measurement(capsys, tmp_path):
    run(capsys, "ex")
    code, data = run_json(
        capsys, "ex", "check", "double", "--inline", "--quick", "--predict", "1ms"
    )
    assert code == 1 and data["prediction"]["measured"] is None  # the starter fails: no timing
    assert "not measured: the check" in data["prediction"]["words"]
    mine = tmp_path / "work" / "901_double.py"
    mine.write_text((FIXTURES / "901-double" / "solution.py").read_text())
    code, data = run_json(
        capsys, "ex", "check", "double", "--inline", "--quick", "--predict", "40%"
    )
    assert code == 0
    shown, timing = data["prediction"], data["check"]["timing"]
    assert shown["quantity"] == "percent" and shown["predicted"] == 40.0
    assert shown["measured"] == pytest.approx(100 * timing["fraction"])
    assert shown["off"] == pytest.approx(max(shown["measured"] / 40, 40 / shown["measured"]))
    assert data["calibration"]["numbers"] == 1
    code, out, _ = run(capsys, "ex", "check", "double", "--inline", "--quick", "--predict", "you")
    assert "Prediction: you predicted you wins;" in out and "Calibration:" in out
    code, _, err = run(capsys, "ex", "check", "double", "--inline", "--predict", "soon")
    assert code == 2 and "--predict 'soon' is not a prediction" in err and "you, library" in err


def test_same_seed_same_failure(capsys, tmp_path):
    run(capsys, "ex")
    mine = tmp_path / "work" / "901_double.py"
    mine.write_text((FIXTURES / "901-double" / "wrong" / "triples.py").read_text())
    _, a = run_json(capsys, "ex", "check", "double", "--inline", "--quick", "--seed", "0x2a")
    _, b = run_json(capsys, "ex", "check", "double", "--inline", "--quick", "--seed", "42")
    assert a["check"]["message"] == b["check"]["message"] and a["check"]["seed"] == 42


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("ex", "check", "dubble"), "did you mean 'double'"),
        (("ex", "check", "double", "--seed", "-1"), "'-1' is not a whole number from 0 to"),
        (("ex", "check", "double", "--seed", "lots"), "'lots' is not a whole number"),
        (("ex", "check", "gpu-only"), "gpu-only needs a GPU: no GPU in this test"),
        (("ex", "check", "double"), "gpulab ex reset double` creates it"),  # no file yet
        (("ex", "hint", "nope"), "unknown exercise 'nope'"),
        (("ex", "solution", "double"), "has not passed yet"),
        (("ex", "frobnicate"), "invalid choice"),
    ],
)
def test_bad_input_is_exit_2_and_one_line(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_hints_one_at_a_time_and_remembered(capsys):
    _, first = run_json(capsys, "ex", "hint", "double")
    assert first == {
        "exercise": "double",
        "revealed": 1,
        "total": 2,
        "new": True,
        "hints": ["Multiply by two."],
    }
    code, out, _ = run(capsys, "ex", "hint", "double")
    assert code == 0 and "Hint 2 of 2: np.multiply takes out=." in out
    code, out, _ = run(capsys, "ex", "hint", "double")
    assert "last hint" in out
    _, data = run_json(capsys, "ex")
    assert next(r for r in data["exercises"] if r["id"] == "double")["hints_revealed"] == 2


def test_reset_keeps_a_backup(capsys, tmp_path):
    run(capsys, "ex")
    mine = tmp_path / "work" / "901_double.py"
    mine.write_text("# my work\n")
    code, data = run_json(capsys, "ex", "reset", "double")
    assert code == 0 and Path(data["backup"]).read_text() == "# my work\n"
    assert mine.read_text() == (FIXTURES / "901-double" / "starter.py").read_text()


def test_solution_after_passing_or_with_force(capsys, tmp_path):
    code, data = run_json(capsys, "ex", "solution", "double", "--force")
    assert code == 0 and data["solved"] is False and "np.multiply" in data["text"]
    run(capsys, "ex")
    (tmp_path / "work" / "901_double.py").write_text(
        (FIXTURES / "901-double" / "solution.py").read_text()
    )
    assert run(capsys, "ex", "check", "double", "--inline", "--quick")[0] == 0
    code, out, _ = run(capsys, "ex", "solution", "double")
    assert code == 0 and "np.multiply(x, 2, out=out)" in out


def test_show_prints_the_statement(capsys):
    code, data = run_json(capsys, "ex", "show", "double")
    assert code == 0 and "2 * x" in data["statement"] and data["path"].endswith("901_double.py")


# --- watch ---------------------------------------------------------------------------------------


async def test_watch_rechecks_on_save_and_moves_on(tmp_path):
    from gpulab.ex.session import Checker
    from gpulab.ex.watch import watch_loop
    from gpulab.exercises.loader import load_catalog
    from gpulab.exercises.workspace import Workspace
    from gpulab.store.database import Store

    cat, ws = load_catalog(FIXTURES), Workspace(tmp_path / "w")
    double = cat.get("double")
    said: list[dict] = []
    checked = asyncio.Event()
    stop = asyncio.Event()

    def say(event: dict, text: str) -> None:
        said.append(event)
        if event["type"] == "check":
            checked.set()

    async def edit() -> None:
        await asyncio.wait_for(checked.wait(), 30)  # the starter's failing check
        checked.clear()
        path = ws.path(double)
        path.write_text((FIXTURES / "901-double" / "wrong" / "triples.py").read_text())
        await asyncio.wait_for(checked.wait(), 30)
        checked.clear()
        path.write_text((FIXTURES / "901-double" / "solution.py").read_text())
        await asyncio.wait_for(checked.wait(), 30)
        await asyncio.sleep(0.3)
        stop.set()  # only reached if the loop did not end by itself

    with Store(tmp_path / "db.sqlite3") as st:
        async with Checker(inline=True, quick=True) as checker:
            editor = asyncio.create_task(edit())
            checks = await asyncio.wait_for(
                watch_loop(
                    cat,
                    ws,
                    double,
                    inv=ex_commands.cpu_only("test"),
                    checker=checker,
                    store=st,
                    say=say,
                    debounce_ms=50,
                    stop=stop,
                ),
                60,
            )
            stopped_by_test = stop.is_set()
            await editor
    verdicts = [e["check"]["verdict"] for e in said if e["type"] == "check"]
    assert verdicts == ["fail", "fail", "pass"] and checks == 3
    assert "NotImplementedError" in said[1]["check"]["message"]
    assert said[-1] == {"type": "done"}  # the GPU-only exercise cannot run here: nothing left
    assert not stopped_by_test


def _series(grades, figure=0.7):
    return {"checks": len(grades), "passed": True, "messages": [], "grades": grades,
            "flips": 0, "figure": figure, "figures": [figure] * len(grades)}  # fmt: skip


def test_bench_part_targets_and_table():
    from gpulab.benchmark import exercises as ex_bench

    wrong = {
        "name": "w",
        "expect": "never written",
        "rejected": True,
        "message_ok": True,
        "message": "m",
    }
    part = {
        "quick": False,
        "exercises": [
            {
                "exercise": "a",
                "order": 1,
                "needs": ["cpu"],
                "passed": True,
                "message": "",
                "grade": "silver",
                "fraction": 0.7,
                "library_fraction": 0.8,
                "value": 2000.0,
                "library": "torch.add",
                "metric": "GB/s",
                "first_check_s": 0.9,
                "repeat_check_s": 0.3,
                "reference": _series(["silver", "silver"]),
                "wrong": [wrong],
            },
            {
                "exercise": "k",
                "order": 20,
                "needs": ["cupy"],
                "passed": True,
                "message": "",
                "grade": "bronze",
                "fraction": 0.45,
                "library_fraction": 0.8,
                "value": 1500.0,
                "library": "cupy.add",
                "metric": "GB/s",
                "prepare_s": 6.25,
                "first_check_s": 1.8,
                "repeat_check_s": 0.4,
                "repeat_phases": {"runs": 0.05, "compare": 0.21, "timing: rounds": 0.1},
                "reference": _series(["bronze", "bronze"], figure=0.45),
                "wrong": [wrong, {**wrong, "name": "x", "rejected": False, "message_ok": False}],
            },
            {"exercise": "g", "order": 30, "skipped": "needs a GPU: none"},
        ],
    }
    by = {c["name"]: c for c in ex_bench.comparisons(part, gpu=True)}
    assert by["exercises: reference solutions pass"]["status"] == "pass"
    assert by["exercises: known-wrong solutions rejected with their message"]["value"] == 2
    assert by["exercises: known-wrong solutions rejected with their message"]["status"] == "miss"
    assert by["exercises: reference silver or better in every repeat"]["value"] == 1
    first = by[
        "exercises: first check after the exercise's preparation, worst of the kernel exercises (s)"
    ]
    assert first["value"] == 1.8 and first["status"] == "miss"
    assert by["exercises: repeat check, worst of the kernel exercises (s)"]["status"] == "pass"
    table = "\n".join(ex_bench.markdown_lines(part))
    # the one-time preparation is its own column, beside the first check it speeds up
    row = "| k | pass | bronze/bronze (0.45) | - | 1500 GB/s | 45% | 80% | 6.25 s | 1.80 s | 0.40 s | "
    # reference checks passed (2 of 2 when a bench before --repeat recorded none), wrong, right
    assert row + "compare 0.21, timing: rounds 0.10 | 2/2 | 1/2 | 0/0 |" in table
    # no phases and no preparation recorded (a bench before either): dashes
    assert "| 80% | - | 0.90 s | 0.30 s | - | 2/2 | 1/1 | 0/0 |" in table
    assert "| g | not run: needs a GPU: none |" in table
    assert "k/x: expected 'never written'" in table
