"""The ladder (gpulab.exercises.ladder) without a GPU: matmul-tiled's rungs, from the naive kernel
to the expert's, each a file with its idea in one sentence, each checked by the engine's own
grader on the CUDA emulator (rungs 1 and 2, below the exercise, compute every case right and are
refused only for using no shared memory); placing a figure on the nearest rung; the figures kept
per device and per version of the rungs; `gpulab ex ladder`.

The rungs' speeds, and so their order, are measured on a GPU: tests/test_ladder_gpu.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from test_kernel_track import _grade, _sources

from gpulab.cli import main
from gpulab.exercises import ladder
from gpulab.exercises.loader import load_catalog
from gpulab.testing import cuda_emu, fake_cupy, nvrtc

EX = load_catalog().get("matmul-tiled")
FOLDER = EX.folder
NAMES = [
    "naive",
    "coalesced",
    "shared-tiles",
    "register-tile-1d",
    "register-tile-2d",
    "vectorized",
    "expert",
]


@pytest.fixture(scope="module")
def _emulated_rungs() -> None:
    if cuda_emu.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    cuda_emu.prebuild([code for code, _ in _sources(FOLDER, _paths()).values()])


@pytest.fixture
def cupy_fake(monkeypatch: pytest.MonkeyPatch, _emulated_rungs: None) -> ModuleType:
    return fake_cupy.install(monkeypatch)


def _paths() -> list[Path]:
    return [r.path for r in ladder.rungs(EX)]


def test_the_matmul_ladder_runs_from_naive_to_the_expert():
    rungs = ladder.rungs(EX)
    assert [r.name for r in rungs] == NAMES and [r.number for r in rungs] == list(range(1, 8))
    assert rungs[-1].path == EX.expert_path
    for r in rungs:
        assert r.idea and r.idea[0].islower() and ". " not in r.idea, r.idea  # one sentence
    assert [r.refused for r in rungs[:2]] == ["uses no shared memory"] * 2
    assert not any(r.refused for r in rungs[2:])


def test_every_rung_compiles_for_the_h100():
    if nvrtc.available() != "nvrtc":
        pytest.skip("needs NVRTC")
    for key, (code, _name) in _sources(FOLDER, _paths()).items():
        assert not nvrtc.compile_errors(code), key


@pytest.mark.parametrize("seed", [7, 12])
def test_every_rung_is_checked_as_a_learners_solution(seed, cupy_fake):
    for r in ladder.rungs(EX):
        message = _grade(FOLDER, r.path, seed)
        if r.refused:
            # the shared-memory refusal comes only after every case matched
            assert message is not None and message.startswith("your kernel uses no shared"), (
                r.name,
                message,
            )
        else:
            assert message is None, (r.name, message)


# figures a GPU might give, in TFLOP/s (made up for these tests: the real ones are measured)
FIGURES = dict(zip(NAMES, [0.5, 2.0, 4.5, 11.0, 24.0, 33.0, 44.0], strict=True))


def _measured() -> dict[str, dict[str, float]]:
    return {n: {"value": v, "of_top": v / FIGURES["expert"]} for n, v in FIGURES.items()}


def test_each_rungs_own_figure_is_placed_on_its_own_rung():
    rungs, measured = ladder.rungs(EX), _measured()
    for r in rungs:
        p = ladder.place(rungs, measured, value=FIGURES[r.name])
        assert p is not None and p.rung == r and p.ratio == pytest.approx(1.0)
        q = ladder.place(rungs, measured, of_top=measured[r.name]["of_top"])
        assert q is not None and q.rung == r


@pytest.mark.parametrize(
    ("value", "rung"),
    [(0.1, 1), (3.5, 3), (5.5, 3), (8.0, 4), (20.0, 5), (60.0, 7)],
)
def test_a_figure_between_rungs_goes_to_the_nearest_by_ratio(value, rung):
    p = ladder.place(ladder.rungs(EX), _measured(), value=value)
    assert p is not None and p.rung.number == rung


def test_the_next_rungs_idea_is_the_next_hint():
    rungs = ladder.rungs(EX)
    p = ladder.place(rungs, _measured(), value=4.4)
    assert p is not None and p.above is not None and p.above.name == "register-tile-1d"
    assert p.speedup == pytest.approx(11.0 / 4.4)
    text = ladder.hint(rungs, p)
    assert text.startswith("You are on rung 3, shared tiles; rung 4 ran 2.5x faster")
    assert text.endswith(f"its idea: {p.above.idea}.")
    top = ladder.place(rungs, _measured(), value=44.0)
    assert top is not None and top.above is None and "top of the ladder" in top.sentence()
    assert ladder.place(rungs, {}, value=3.0) is None  # nothing measured: no place
    assert ladder.place(rungs, _measured(), value=None) is None
    assert "shared memory" in ladder.hint(rungs, None)  # the first rung the check takes


def test_figures_are_kept_per_device_and_per_version(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    assert ladder.figures(EX, "gpu-a") == {}
    ladder.observe(EX, "gpu-a", _measured(), metric="TFLOP/s")
    assert ladder.figures(EX, "gpu-a") == _measured()
    assert ladder.figures(EX, "gpu-b") == {}  # another device: not measured there
    path = next(tmp_path.rglob("*.json"))
    data = json.loads(path.read_text())
    data["exercises"][EX.id]["fingerprint"] = "other rungs"
    path.write_text(json.dumps(data))
    assert ladder.figures(EX, "gpu-a") == {}  # measured for other code


def test_the_cli_draws_the_ladder_and_places_a_figure(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    assert main(["ex", "ladder", "matmul-tiled"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("The ladder of matmul-tiled: 7 rungs")
    assert "not measured" in out[1] and all(len(ln) <= 100 for ln in out)
    assert any("--measure" in ln for ln in out)
    from gpulab.ex.cli import _device_key

    ladder.observe(EX, _device_key(), _measured(), metric="TFLOP/s")
    assert main(["ex", "ladder", "matmul-tiled", "--figure", "10", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["ladder"]
    assert data["rung"] == 4 and data["hint"].startswith("You are on rung 4")
    assert [r["name"] for r in data["rungs"]] == NAMES
    assert main(["ex", "ladder", "matmul-tiled", "--figure", "10"]) == 0
    drawn = capsys.readouterr().out.splitlines()
    assert any(ln.startswith("->  4 register-tile-1d") for ln in drawn), drawn
    assert main(["ex", "ladder", "vector-add"]) == 2
    assert "has no ladder" in capsys.readouterr().err
    from gpulab.ex.commands import machine

    if not any(d.kind == "cuda" for d in machine().devices):  # a GPU would measure for real
        assert main(["ex", "ladder", "matmul-tiled", "--measure"]) == 2
        assert "needs a GPU" in capsys.readouterr().err
