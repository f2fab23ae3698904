"""Bad input a person can type: each is refused before any work, with exit status 2
and one line that names the flag or parameter, the value and what is allowed.

`gpulab run` is called in-process with the runner replaced (`no_run`), so nothing here starts a
worker; test_cli.py runs the real command in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gpulab import cli
from gpulab.core import files
from gpulab.core.params import Int, List, ParamError
from gpulab.experiments import blur


@pytest.fixture
def no_run(monkeypatch) -> list[dict[str, Any]]:
    """Every `gpulab run` that passes validation lands here instead of in a worker."""
    import gpulab.runner.cli

    calls: list[dict[str, Any]] = []

    def fake(experiment: str, params: dict[str, Any], **kw: Any) -> int:
        calls.append({"experiment": experiment, "params": params, **kw})
        return 0

    monkeypatch.setattr(gpulab.runner.cli, "run_headless", fake)
    return calls


def refused(capsys, *argv: str) -> str:
    """Run the CLI; it must exit 2 with exactly one line on stderr, which is returned."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf", "1e400", "１０", "10s", ""])
def test_bad_timeout(capsys, no_run, value):
    line = refused(capsys, "run", "montecarlo", f"--timeout={value}")
    assert line.startswith("gpulab: --timeout")
    assert "more than 0 and at most 86400" in line
    assert no_run == []


def test_good_timeout_and_device_reach_the_run(no_run):
    assert cli.main(["run", "montecarlo", "--timeout", "2.5", "--device", "1"]) == 0
    assert cli.main(["run", "montecarlo"]) == 0
    assert [(c["timeout"], c["device"]) for c in no_run] == [(2.5, 1), (0.0, 0)]


@pytest.mark.parametrize("value", ["-1", "1.5", "０", "٣", "nan", "x", "", "99999"])
def test_bad_device(capsys, no_run, value):
    line = refused(capsys, "run", "montecarlo", f"--device={value}")
    assert line.startswith("gpulab: --device") and "GPU index" in line
    assert no_run == []


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "０.５", "1e400", "0.5s"])
def test_bad_sample_period(capsys, monkeypatch, value):
    monkeypatch.delenv(cli.SAMPLE_PERIOD_ENV, raising=False)
    line = refused(capsys, f"--sample-period={value}", "list")
    assert line.startswith("gpulab: --sample-period") and "0.25 to 5 seconds" in line
    monkeypatch.setenv(cli.SAMPLE_PERIOD_ENV, value)  # read where it applies: the TUI
    problem = cli.sample_period(None)
    assert isinstance(problem, str) and problem.startswith(cli.SAMPLE_PERIOD_ENV)


def test_empty_list_item_is_named(capsys, no_run):
    line = refused(capsys, "run", "matmul", "--set", "sizes=256,,512")
    assert "parameter 'sizes'" in line and "item 2 is empty" in line
    line = refused(capsys, "run", "matmul", "--set", "sizes=256,512,")
    assert "ends with a comma" in line
    line = refused(capsys, "run", "matmul", "--set", "dtypes=fp32,,bf16")
    assert "parameter 'dtypes'" in line and "item 2 is empty" in line
    assert no_run == []


def test_out_of_range_list_items_are_named(capsys, no_run):
    line = refused(capsys, "run", "matmul", "--set", "sizes=8,16")
    assert "item 1 ('8') is out of range" in line
    assert "item 2" not in line  # 16 is allowed
    assert "from 16 to 32768" in line
    line = refused(capsys, "run", "matmul", "--set", "sizes=256,big,99999")
    assert "item 2 ('big') is not a number" in line and "item 3 ('99999') is out of range" in line


@pytest.mark.parametrize(
    "value",
    [
        "４０９６",  # full-width
        "٤٠٩٦",  # Arabic-Indic
        "४०९६",  # Devanagari
        "1\u00a0000",  # a no-break space inside
        "１e6",
        "10\u212a",  # the Kelvin sign, which lower() turns into "k"
    ],
)
def test_unicode_digits_are_not_numbers(capsys, no_run, value):
    line = refused(capsys, "run", "vector-add", "--set", f"n={value}")
    assert "parameter 'n'" in line and "ASCII" in line
    line = refused(capsys, "run", "matmul", "--set", f"sizes=256,{value}")
    assert "item 2" in line and "ASCII" in line
    assert no_run == []


def test_unicode_look_alikes_are_not_choices():
    dtypes = List("dtypes", ["fp32"], item="choice", choices=("fp32", "bf16"))
    for text in ("ｆｐ32", "bf１6", "FP32\u200b"):
        with pytest.raises(ParamError):
            dtypes.parse(text)
    assert dtypes.parse(" FP32 , bf16 ") == ["fp32", "bf16"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400, True])
def test_python_values_from_a_lesson_link_are_checked_too(value):
    with pytest.raises(ParamError) as info:
        Int("n", 1, min=1, max=100).parse(value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_a_long_value_is_cut_in_the_message(capsys, no_run):
    line = refused(capsys, "run", "vector-add", "--set", "n=" + "9" * 5000)
    assert "parameter 'n'" in line and "out of range" in line and len(line) < 300


# ------------------------------------------------------------------------------ image paths


def write_png(path: Path, size: tuple[int, int] = (32, 24)) -> Path:
    Image.new("RGB", size, (200, 100, 50)).save(path)
    return path


def image_line(capsys, value: str) -> str:
    line = refused(capsys, "run", "blur", "--set", f"image={value}")
    assert line.startswith("gpulab: parameter 'image'")
    assert "'synthetic', 'testcard' or the path of a PNG or JPEG file" in line
    return line


def test_missing_image(capsys, no_run, tmp_path):
    assert "does not exist" in image_line(capsys, str(tmp_path / "nope.png"))
    assert "a part of its path is a file" in image_line(
        capsys, str(write_png(tmp_path / "a.png")) + "/b.png"
    )
    assert no_run == []


def test_image_name_longer_than_the_system_allows(capsys, no_run, tmp_path):
    line = image_line(capsys, str(tmp_path / ("x" * 5000 + ".png")))
    assert "too long" in line and len(line) < 300
    assert no_run == []


def test_image_that_is_a_folder_or_a_device(capsys, no_run, tmp_path):
    assert "is a folder" in image_line(capsys, str(tmp_path))
    assert "not a regular file" in image_line(capsys, os.devnull)
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)  # opening a pipe would block: it must be refused from its stat alone
    assert "not a regular file" in image_line(capsys, str(fifo))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_image(capsys, no_run, tmp_path):
    path = write_png(tmp_path / "locked.png")
    path.chmod(0)
    assert "permission denied" in image_line(capsys, str(path))


def test_image_that_does_not_decode(capsys, no_run, tmp_path):
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    assert "is not an image file" in image_line(capsys, str(text))
    cut = tmp_path / "cut.png"
    cut.write_bytes(write_png(tmp_path / "whole.png", (64, 64)).read_bytes()[:80])
    assert "could not be read" in image_line(capsys, str(cut))
    assert "too small" in image_line(capsys, str(write_png(tmp_path / "tiny.png", (4, 4))))
    assert "NUL" in str(files.image_problem("a\x00b.png"))


def test_good_images_pass(no_run, tmp_path):
    path = write_png(tmp_path / "ok.png")
    for image in (str(path), "testcard", "synthetic"):
        assert cli.main(["run", "blur", "--set", f"image={image}"]) == 0
    assert [c["params"]["image"] for c in no_run] == [str(path), "testcard", "synthetic"]


def test_too_small_width_is_refused_with_the_params(capsys, no_run):
    line = refused(capsys, "run", "blur", "--set", "width=5")
    assert "parameter 'width'" in line and "too small" in line


def test_missing_image_in_a_subprocess_is_refused_at_once(tmp_path):
    """The real command: refused before a worker starts (it used to fail after seconds)."""
    out = subprocess.run(
        [sys.executable, "-m", "gpulab", "run", "blur", "--set", f"image={tmp_path / 'x.png'}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "does not exist" in out.stderr
    assert "worker" not in out.stderr


async def test_the_form_shows_the_same_message(tmp_path):
    """The TUI's form validates with the same Param, so it says what the CLI says."""
    from test_app import fake_app, ready, wait_for
    from textual.widgets import Static

    missing = str(tmp_path / "nope.png")
    with pytest.raises(ParamError) as info:
        blur.EXPERIMENT.params.validate({"image": missing})
    expected = str(info.value)
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        app.open_experiment("blur", {"image": missing})
        await wait_for(pilot, lambda: app.query("#field-image"), 10, "the blur form")
        field = app.query_one("#field-image")
        await wait_for(pilot, lambda: field.validate(), 10, "the field's check")
        assert field.error == expected and "does not exist" in expected
        assert expected in str(field.query_one(".param-note", Static).render())
        assert app.panel.form.errors() == [expected]


@pytest.mark.parametrize(
    "argv",
    [
        ["ex", "list", "--device=-1"],
        ["ex", "list", "--device=０"],
        ["ex", "list", "--device=1.5"],
        ["ex", "check", "1", "--seed=７"],
        ["ex", "check", "1", "--seed=-3"],
    ],
)
def test_exercise_flags_are_ascii_whole_numbers_too(capsys, argv):
    line = refused(capsys, *argv)
    assert argv[-1].split("=")[0] in line and "is not" in line
