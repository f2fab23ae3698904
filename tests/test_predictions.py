"""Predictions: kept in the store and read back, measured by a run's or a check's figure, the
calibration's arithmetic, `gpulab run --predict` and `gpulab predictions`, and the probes of the
measured quiz questions run for real on this machine (the CPU here)."""

from __future__ import annotations

import json
import math

import pytest

from gpulab.cli import main
from gpulab.core.doc_tags import tag
from gpulab.core.errors import BadInput
from gpulab.history.predictions import (
    CHOICE,
    EXERCISE,
    EXPERIMENT,
    PERCENT,
    TIME,
    WINDOW,
    WINNER,
    Guess,
    Prediction,
    Predictions,
    calibration,
    check_figure,
    experiment_figure,
    parse,
)
from gpulab.store.database import SCHEMA_VERSION, Store


def test_parse_reads_times_percents_and_winners():
    assert parse("2ms") == Guess(TIME, 2.0)
    assert parse(" 300 us ") == Guess(TIME, 0.3)
    assert parse("1.5s") == Guess(TIME, 1500.0)
    assert parse("4") == Guess(TIME, 4.0)  # a bare number is ms
    assert parse("40%") == Guess(PERCENT, 40.0)
    assert parse("CuPy", ["numpy", "cupy"]) == Guess(WINNER, "cupy")  # the id as listed
    assert parse("") is None and parse("   ") is None  # no prediction
    for bad in ("fast", "-2ms", "0%", "1e400ms", "2 parsecs", "cupy", "٣ms"):
        with pytest.raises(BadInput, match="--predict"):
            parse(bad, ["numpy"], flag="--predict")


def test_a_prediction_is_kept_then_measured_and_read_back(tmp_path):
    path = tmp_path / "p.db"
    with Store(path) as st:
        assert st.pragma("user_version") == SCHEMA_VERSION
        kept = Predictions(st)
        p = kept.predict(EXPERIMENT, "vector-add", Guess(TIME, 2.0))
        assert p.id == 1 and p.measured is None and p.measured_at is None
        q = kept.predict(EXERCISE, "vector-add", Guess(WINNER, "you"))
        kept.measure(p, 4.0, device="CPU (x86_64)", note="numpy, 1M")
        kept.measure(q, None, note="the check failed: wrong answer")
    with Store(path) as st:  # a new connection: what a restart reads
        done, failed = Predictions(st).all()
    assert (done.kind, done.subject, done.quantity, done.predicted) == (
        EXPERIMENT,
        "vector-add",
        TIME,
        2.0,
    )
    assert done.measured == 4.0 and done.device == "CPU (x86_64)" and done.measured_at
    assert done.off == pytest.approx(2.0) and done.right is None
    assert done.words() == (
        "you predicted 2 ms, measured 4 ms (2x off: you guessed low) · numpy, 1M"
    )
    assert failed.measured is None and failed.right is None and failed.off is None
    assert failed.words() == "you predicted you wins; not measured: the check failed: wrong answer"
    assert failed.to_dict()["predicted"] == "you"


def _number(i: int, predicted: float, measured: float) -> Prediction:
    return Prediction(i, EXPERIMENT, "x", TIME, predicted, measured, "", "", "", "")


def _name(i: int, right: bool) -> Prediction:
    return Prediction(i, EXPERIMENT, "x", WINNER, "a", "a" if right else "b", "", "", "", "")


def test_calibration_is_the_median_factor_off_and_the_share_right_over_two_windows():
    # the window before: 4x off each time (too high and too low alike); the last: 1.5x, one wild
    before = [_number(i, 4.0 if i % 2 else 0.25, 1.0) for i in range(WINDOW)]
    last = [_number(100 + i, 1.5, 1.0) for i in range(WINDOW - 1)] + [_number(200, 1000.0, 1.0)]
    cal = calibration([*before, *last])
    assert cal.off == pytest.approx(1.5)  # the median: the wild guess does not swamp it
    assert cal.off_before == pytest.approx(4.0)
    assert cal.number_trend == "getting better" and cal.numbers == 2 * WINDOW
    assert calibration([*last, *before]).number_trend == "getting worse"
    names = [_name(i, i < 3) for i in range(WINDOW)] + [_name(50 + i, i < 8) for i in range(WINDOW)]
    cal = calibration(names)
    assert (cal.right, cal.right_before, cal.name_trend) == (0.8, 0.3, "getting better")
    assert "8 of your last 10 picks were right (30% before: getting better)" in cal.words()
    few = calibration([_number(1, 2.0, 1.0), _number(2, 3.0, 1.0)])  # too few for a trend
    assert few.number_trend == "" and few.off == pytest.approx(math.sqrt(6))
    unmeasured = Prediction(9, EXPERIMENT, "x", TIME, 1.0, None, "", "", "", None)
    assert calibration([unmeasured]).words() == "Calibration: no measured predictions yet."


def _row(contender: str, median_s: float, throughput: float | None, pct: float | None) -> dict:
    return {"contender": contender, "size": "1M", "time_median_s": median_s,
            "time_min_s": median_s, "time_max_s": median_s, "runs": 3,
            "throughput": throughput, "percent_of_peak": pct, "peak_name": "copy"}  # fmt: skip


def test_the_figures_come_from_the_fastest_row_or_the_learners_call():
    result = {
        "record": {"experiment": "vector-add", "params": {}},
        "measurements": [_row("numpy", 0.004, 1.0, 20.0), _row("torch-cpu", 0.002, 2.0, None)],
    }
    assert experiment_figure(TIME, result) == (2.0, "the fastest row: torch-cpu at 1M")
    assert experiment_figure(WINNER, result)[0] == "torch-cpu"
    value, why = experiment_figure(PERCENT, result)
    assert value is None and "no percent of a calibrated ceiling" in why
    timing = {"learner": {"median_s": 0.003}, "fraction": 0.25, "vs_library": 0.5,
              "ceiling": {"name": "copy"}}  # fmt: skip
    assert check_figure(TIME, timing) == (3.0, "your median call")
    assert check_figure(PERCENT, timing)[0] == 25.0
    assert check_figure(WINNER, timing)[0] == "library"
    assert check_figure(TIME, None)[0] is None


def test_run_predict_json_shows_the_prediction_beside_the_measurement(capsys):
    argv = ["run", "montecarlo", "--set", "samples=1e4", "--json", "--predict", "torch-cpu"]
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    last = lines[-1]
    assert last["schema"] == tag("prediction")
    result = next(e for e in lines if e.get("type") == "result")["result"]
    winner = experiment_figure(WINNER, result)[0]
    shown = last["prediction"]
    assert (shown["predicted"], shown["measured"]) == ("torch-cpu", winner)
    assert shown["right"] == (winner == "torch-cpu") and shown["device"].startswith("CPU")
    assert last["calibration"]["names"] == 1
    assert main(["predictions", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["schema"] == tag("predictions")
    assert [p["measured"] for p in listed["predictions"]] == [winner]
    assert main(["predictions"]) == 0
    text = capsys.readouterr().out
    assert "experiment montecarlo" in text and "Calibration: your one measured pick" in text


def test_a_bad_prediction_is_one_line_and_nothing_runs(capsys):
    assert main(["run", "montecarlo", "--predict", "fast"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpulab: --predict 'fast' is not a prediction") and err.count("\n") == 1
    assert "numpy, torch-cpu" in err  # the contenders it could name
    assert main(["predictions", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["predictions"] == []


@pytest.mark.parametrize("probe", ["atomic-order", "launch-cost", "allreduce-latency"])
def test_a_quiz_probe_measures_this_machine_and_picks_a_choice(probe):
    """The probes of the measured quiz questions are real measurements: on this machine's CPU
    (labelled so) here, on the GPU where there is one."""
    from gpulab.core.devices import detect
    from gpulab.experiments.inline import run_job
    from gpulab.lessons.catalog import load_catalog

    events: list[dict] = []
    assert run_job("j", "quiz-measure", {"probe": probe}, detect(), events.append) == "result"
    summary = events[-1]["result"]["summary"]
    assert summary["on"] in ("CPU", "GPU") and summary["figure"] > 0 and summary["words"]
    assert events[-1]["result"]["measurements"]
    question = next(
        q for le in load_catalog() for q in le.quiz if q.measure and q.measure.probe == probe
    )
    assert 0 <= question.right(summary["figure"]) < len(question.choices)


def test_a_measured_question_is_written_without_an_answer():
    from gpulab.lessons.lesson_format import LessonFormatError, validate_meta

    base = {"id": "x", "chapter": 18, "order": 1, "title": "T", "objectives": ["o"],
            "experiments": []}  # fmt: skip
    q = {"q": "Q?", "choices": ["low", "mid", "high"], "explain": "Why.",
         "measure": {"probe": "launch-cost", "bounds": [2, 10]}}  # fmt: skip
    (question,) = validate_meta({**base, "quiz": [q]}, "x.md")["quiz"]
    assert question.answer is None and [question.right(f) for f in (1, 5, 20)] == [0, 1, 2]
    for bad, why in (
        ({**q, "answer": 0}, "measurement"),
        ({**q, "measure": {"probe": "nope", "bounds": [2, 10]}}, "probe 'nope'"),
        ({**q, "measure": {"probe": "launch-cost", "bounds": [10, 2]}}, "2 increasing"),
        ({**q, "measure": {"probe": "launch-cost", "bounds": [2]}}, "2 increasing"),
    ):
        with pytest.raises(LessonFormatError, match=why):
            validate_meta({**base, "quiz": [bad]}, "x.md")
    assert CHOICE == "choice"
