"""The ladders (gpulab.exercises.ladder) without a GPU: matmul-tiled's, reduction-kernel's,
transpose-tiled's and softmax-rows' rungs, from the first kernel a person writes to the expert's,
each a file with its idea in one sentence, each checked by the engine's own grader on the CUDA
emulator (the rungs below the exercise, matmul's 1 and 2 and transpose's 1, compute every case
right and are refused only for using no shared memory); held-out variants written for the test
(tests/fixtures/ladder/: a rung's idea in other code) pass the check too and are placed on their
own rung; placing a figure on the nearest rung; the memory roof (rungs at a copy's speed form a
band: in order with each other, a figure there placed in the band); the figures kept per device
and per version of the rungs; `gpulab ex ladder`.

The rungs' speeds, and so their order, are measured on a GPU: tests/test_ladder_gpu.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from test_kernel_track import _grade, _sources

from gpulab.cli import main
from gpulab.emulator import cuda, toolchain
from gpulab.exercises import ladder
from gpulab.exercises.loader import load_catalog
from gpulab.testing import fake_cupy, nvrtc

CATALOG = load_catalog()
EX = CATALOG.get("matmul-tiled")
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
# every ladder, bottom first: its rungs' names, and those the check refuses (below the exercise)
LADDERS = {
    "matmul-tiled": (NAMES, {"naive", "coalesced"}),
    "reduction-kernel": (
        [
            "interleaved",
            "sequential",
            "add-during-load",
            "warp-shuffles",
            "several-per-thread",
            "expert",
        ],
        set(),
    ),
    "transpose-tiled": (
        ["naive", "shared-tile", "padded-tile", "several-rows", "expert"],
        {"naive"},
    ),
    "softmax-rows": (["thread-per-row", "warp-per-row", "block-per-row", "expert"], set()),
}
# held-out variants: a rung's idea in code the ladder does not hold; the first line names the rung
HELD_OUT = sorted((Path(__file__).parent / "fixtures" / "ladder").glob("*.py"))


def _held_out(path: Path) -> tuple[str, str]:
    """(exercise, rung name) of a held-out variant."""
    rung = path.read_text().splitlines()[0].removeprefix("# held-out: ")
    return next(n for n in LADDERS if path.name.startswith(n + "-")), rung


@pytest.fixture(scope="module")
def _emulated_rungs() -> None:
    if toolchain.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    # every ladder's rungs and the held-out variants in one compiler run
    codes = []
    for name in LADDERS:
        ex = CATALOG.get(name)
        codes += [code for code, _ in _sources(ex.folder, _paths(ex)).values()]
    codes += [code for code, _ in _sources(HELD_OUT[0].parent, HELD_OUT).values()]
    cuda.prebuild(codes)


@pytest.fixture
def cupy_fake(monkeypatch: pytest.MonkeyPatch, _emulated_rungs: None) -> ModuleType:
    return fake_cupy.install(monkeypatch)


def _paths(ex=EX) -> list[Path]:
    return [r.path for r in ladder.rungs(ex)]


def test_the_matmul_ladder_runs_from_naive_to_the_expert():
    rungs = ladder.rungs(EX)
    assert [r.name for r in rungs] == NAMES and [r.number for r in rungs] == list(range(1, 8))
    assert rungs[-1].path == EX.expert_path
    for r in rungs:
        assert r.idea and r.idea[0].islower() and ". " not in r.idea, r.idea  # one sentence
    assert [r.refused for r in rungs[:2]] == ["uses no shared memory"] * 2
    assert not any(r.refused for r in rungs[2:])


@pytest.mark.parametrize("name", [n for n in LADDERS if n != "matmul-tiled"])
def test_each_ladder_runs_from_the_first_kernel_to_the_expert(name):
    ex = CATALOG.get(name)
    rungs = ladder.rungs(ex)
    names, refused = LADDERS[name]
    assert [r.name for r in rungs] == names and [r.number for r in rungs] == list(
        range(1, len(names) + 1)
    )
    assert 3 <= len(rungs) - 1 <= 6 and rungs[-1].path == ex.expert_path
    for r in rungs:
        assert r.idea and r.idea[0].islower() and ". " not in r.idea, r.idea  # one sentence
        assert r.refused == ("uses no shared memory" if r.name in refused else ""), r.name
    # one idea a rung: no two rungs say the same thing
    assert len({r.idea for r in rungs}) == len(rungs)


def test_every_rung_compiles_for_the_h100():
    if nvrtc.available() != "nvrtc":
        pytest.skip("needs NVRTC")
    for name in LADDERS:
        ex = CATALOG.get(name)
        for key, (code, _name) in _sources(ex.folder, _paths(ex)).items():
            assert not nvrtc.compile_errors(code), (name, key)


# one pass over each ladder (matmul's in two seeds: its shapes are the most varied)
@pytest.mark.parametrize(
    ("name", "seed"),
    [("matmul-tiled", 7), ("matmul-tiled", 12)] + [(n, 7) for n in LADDERS if n != "matmul-tiled"],
)
def test_every_rung_is_checked_as_a_learners_solution(name, seed, cupy_fake):
    ex = CATALOG.get(name)
    for r in ladder.rungs(ex):
        message = _grade(ex.folder, r.path, seed)
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


# figures the other ladders' rungs might give, in GB/s (made up, as FIGURES)
OTHER_FIGURES = {
    "reduction-kernel": [150.0, 420.0, 800.0, 1400.0, 2600.0, 3500.0],
    "transpose-tiled": [450.0, 1300.0, 2000.0, 2900.0, 3300.0],
    "softmax-rows": [40.0, 1400.0, 2900.0, 3300.0],
}


def _synthetic(name: str) -> dict[str, dict[str, float]]:
    """A measured record of ladder `name` as a GPU might give it."""
    if name == "matmul-tiled":
        return _measured()
    values = dict(zip(LADDERS[name][0], OTHER_FIGURES[name], strict=True))
    return {n: {"value": v, "of_top": v / values["expert"]} for n, v in values.items()}


@pytest.mark.parametrize("name", LADDERS)
def test_each_rungs_own_figure_is_placed_on_its_own_rung(name):
    rungs, measured = ladder.rungs(CATALOG.get(name)), _synthetic(name)
    for r in rungs:
        p = ladder.place(rungs, measured, value=measured[r.name]["value"])
        assert p is not None and p.rung == r and p.ratio == pytest.approx(1.0)
        q = ladder.place(rungs, measured, of_top=measured[r.name]["of_top"])
        assert q is not None and q.rung == r


def test_held_out_variants_pass_and_are_placed_on_their_own_rung(cupy_fake):
    assert {_held_out(p)[0] for p in HELD_OUT} == set(LADDERS) - {"matmul-tiled"}
    for path in HELD_OUT:
        name, own = _held_out(path)
        ex = CATALOG.get(name)
        assert _grade(ex.folder, path, 7) is None, path.name
        rungs, measured = ladder.rungs(ex), _synthetic(name)
        assert own in measured, path.name
        # a variant of a rung's idea runs near that rung: a little faster or slower
        for factor in (0.85, 1.15):
            p = ladder.place(rungs, measured, of_top=measured[own]["of_top"] * factor)
            assert p is not None and p.rung.name == own, (path.name, factor, p)


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
    err = capsys.readouterr().err
    assert "has no ladder" in err and all(n in err for n in LADDERS), err
    from gpulab.ex.commands import machine

    if not any(d.kind == "cuda" for d in machine().devices):  # a GPU would measure for real
        assert main(["ex", "ladder", "matmul-tiled", "--measure"]) == 2
        assert "needs a GPU" in capsys.readouterr().err


@pytest.mark.parametrize("name", [n for n in LADDERS if n != "matmul-tiled"])
def test_the_cli_lists_each_ladders_rungs(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    names = LADDERS[name][0]
    assert main(["ex", "ladder", name]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"The ladder of {name}: {len(names)} rungs")
    assert all(len(ln) <= 100 for ln in out)
    drawn = [ln.split()[:2] for ln in out[1 : len(names) + 1]]  # top first
    assert drawn == [[str(i), n] for i, n in reversed(list(enumerate(names, 1)))], out
    assert main(["ex", "ladder", name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["ladder"]
    assert [r["name"] for r in data["rungs"]] == names and data["rung"] is None
    assert [r["idea"] for r in data["rungs"]] == [r.idea for r in ladder.rungs(CATALOG.get(name))]


@pytest.mark.parametrize("name", [n for n in LADDERS if n != "matmul-tiled"])
def test_a_graded_check_is_placed_by_its_share_of_the_expert(name, tmp_path, monkeypatch):
    # what the TUI shows after a graded check: the check's figure against the expert timed beside it
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    ex, measured = CATALOG.get(name), _synthetic(name)
    rungs = ladder.rungs(ex)
    second = rungs[1]
    timing = {
        "yardstick": {"label": "expert"},
        "of_yardstick": {"figure": measured[second.name]["of_top"] * 1.05},
        "learner": {"value": 1.0},  # a figure in GB/s that would place it on rung 1
    }
    assert ladder.for_check(ex, timing, "gpu-a") == ""  # not measured on this GPU yet
    ladder.observe(ex, "gpu-a", measured, metric="GB/s")
    note = ladder.for_check(ex, timing, "gpu-a")
    assert note.startswith(f"You are on {second.title}; rung 3 ran"), note
    assert note.endswith(f"its idea: {rungs[2].idea}."), note


def test_a_rung_that_is_the_reference_points_at_it(tmp_path):
    ex = CATALOG.get("transpose-tiled")
    four = ladder.rungs(ex)[3]
    assert four.path == ex.solution_path.resolve() and four.name == "several-rows"
    copy = tmp_path / ex.folder.name
    shutil.copytree(ex.folder, copy)
    ref = copy / "ladder" / "04-several-rows.ref"
    mine = load_catalog(tmp_path).get("transpose-tiled")
    assert ladder.rungs(mine)[3].path == (copy / "solution.py").resolve()
    idea = ref.read_text().splitlines()[0]
    for target in ("", "missing.py", "../../../etc/hostname"):
        ref.write_text(f"{idea}\n# file: {target}\n")
        with pytest.raises(ladder.LadderError, match="names a file of its exercise"):
            ladder.rungs(mine)


# reduction-kernel as measured on an H200 (GB/s): rung 4 already saturates DRAM, so rungs 5 and 6
# cannot be faster; the roof is a device copy of the same bytes timed in the same rounds
H200 = dict(zip(LADDERS["reduction-kernel"][0], [396, 911, 1655, 4323, 4312, 4244], strict=True))
H200_ROOF = 4125.0


def _roofed(values: dict[str, float], roof: float = H200_ROOF) -> dict[str, dict[str, float]]:
    """A memory-bound ladder's record: each rung marked at the roof as ladder_measure marks it."""
    top = values["expert"]
    return {
        n: {
            "value": v,
            "of_top": v / top,
            "roof": roof,
            "at_roof": float(v / roof >= ladder.ROOF_FRACTION),
        }
        for n, v in values.items()
    }


def test_rungs_at_the_memory_roof_are_in_order_with_each_other():
    from gpulab.exercises.ladder_measure import Measured

    order = LADDERS["reduction-kernel"][0]
    record = _roofed(H200)
    assert [ladder.at_roof(record[n]) for n in order] == [False] * 3 + [True] * 3
    assert Measured("GB/s", rungs=record, roof=H200_ROOF).ordered(order)
    bare = {n: {k: v for k, v in f.items() if k != "at_roof"} for n, f in record.items()}
    assert not ladder.ordered(order, bare)  # without the roof, 5 and 6 are slower than 4
    # a rung below the roof must still beat the one under it
    assert not ladder.ordered(order, _roofed(H200 | {"add-during-load": 900}))
    # and a rung that falls off the roof is out of order with the roof rungs below it
    assert not ladder.ordered(order, _roofed(H200 | {"expert": 3500}))


def test_a_figure_at_the_roof_is_placed_in_the_roof_band():
    ex = CATALOG.get("reduction-kernel")
    rungs, record = ladder.rungs(ex), _roofed(H200)
    band = [r for r in rungs if r.number >= 4]
    for r in band:
        p = ladder.place(rungs, record, of_top=record[r.name]["of_top"])
        assert p is not None and p.rung == band[0] and list(p.band) == band, (r.name, p)
        assert p.above is None and p.speedup is None  # the band reaches the top
        assert p.sentence() == (
            "You are at this GPU's memory roof, with rungs 4 to 6, the top: DRAM is saturated,"
            " so the ideas above rung 4 gain nothing more here; they pay off on a GPU that needs"
            " more bytes in flight to fill its memory."
        )
    three = ladder.place(rungs, record, value=1700)
    assert three is not None and three.rung == rungs[2] and three.band == ()
    assert three.above == rungs[3] and three.speedup == pytest.approx(4323 / 1700)
    # nearer the band than rung 3, below the roof: the band's lowest rung is what reaches it
    below = ladder.place(rungs, record, value=3000)
    assert below is not None and below.rung == rungs[3] and list(below.band) == band
    assert below.sentence() == (
        "You are below this GPU's memory roof, which rungs 4 to 6, the top, reach: rung 4 ran"
        f" 1.4x faster than yours; its idea: {rungs[3].idea}."
    )
    # a band that stops short of the top: the next rung is the one past it
    fell = _roofed(H200 | {"expert": 3500})
    p = ladder.place(rungs, fell, value=4323)
    assert p is not None and list(p.band) == band[:2] and p.above == rungs[5]
    assert p.sentence().startswith("You are at this GPU's memory roof, with rungs 4 to 5: DRAM")
    # only the top at the roof: one rung, no ideas above it
    lone = _roofed(H200 | {"warp-shuffles": 3000, "several-per-thread": 3500})
    q = ladder.place(rungs, lone, value=4244)
    assert q is not None and q.band == (rungs[5],)
    assert (
        q.sentence()
        == "You are at this GPU's memory roof, with rung 6, the top: DRAM is saturated."
    )


def test_the_cli_draws_the_roof_band(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    from gpulab.ex.cli import _device_key

    ex = CATALOG.get("reduction-kernel")
    ladder.observe(ex, _device_key(), _roofed(H200), metric="GB/s")
    assert main(["ex", "ladder", ex.id, "--figure", "4300"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(len(ln) <= 100 for ln in out), out
    drawn = {ln.split()[1]: ln for ln in out[1:7]}  # rung number -> its line, top first
    assert {n for n, ln in drawn.items() if "at roof" in ln} == {"4", "5", "6"}, out
    assert {n for n, ln in drawn.items() if ln.startswith("->")} == {"4", "5", "6"}, out
    text = " ".join(out)
    assert "a device copy of the same bytes ran at 4125 GB/s" in text, out
    assert "You are at this GPU's memory roof, with rungs 4 to 6, the top" in text, out
    assert main(["ex", "ladder", ex.id, "--figure", "4300", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["ladder"]
    assert data["rung"] == 4 and data["band"] == [4, 5, 6] and data["roof"] == H200_ROOF
    assert data["band_kind"] == "roof"
    assert [r["figure"]["at_roof"] for r in data["rungs"]] == [0.0] * 3 + [1.0] * 3
    assert data["hint"].startswith("You are at this GPU's memory roof")
    # what the TUI shows after a graded check at the expert's speed
    timing = {"yardstick": {"label": "expert"}, "of_yardstick": {"figure": 1.01}}
    note = ladder.for_check(ex, timing, _device_key())
    assert note.startswith("You are at this GPU's memory roof, with rungs 4 to 6"), note


def test_the_rounds_mark_each_rung_against_the_copy_timed_beside_it():
    from gpulab.core.rounds import Contender, Rounds
    from gpulab.exercises.ladder_measure import LIBRARY, ROOF, tally

    names = ["slow", "fast", "expert"]
    timed = Rounds([Contender(n, lambda: None) for n in [*names, LIBRARY, ROOF]])
    work = 4e9  # bytes a call: one second a call is 4 GB/s
    # per round, the seconds a call took: the copy moves the same bytes in 1 s
    timed.times = {
        "slow": [2.0, 2.2, 2.1],
        "fast": [1.05, 1.1, 1.0],
        "expert": [1.08, 1.0, 1.12],
        LIBRARY: [1.3, 1.3, 1.3],
        ROOF: [1.0, 1.0, 1.1],
    }
    timed.done = 3
    m = tally(timed, names, work, "GB/s", "lib", roofed=True)
    assert m.roof == pytest.approx(4.0) and m.library == pytest.approx(4 / 1.3)
    assert m.rungs["slow"]["value"] == pytest.approx(4 / 2.1) and m.rounds == 3
    assert [m.rungs[n]["at_roof"] for n in names] == [0.0, 1.0, 1.0]
    assert m.rungs["fast"]["roof"] == m.roof
    assert m.ordered(names)  # "fast" beat "expert" by its median, but both are at the roof
    plain = tally(timed, names, work, "GB/s", "lib", roofed=False)
    assert plain.roof is None and "at_roof" not in plain.rungs["fast"]
    assert not plain.ordered(names)


# softmax-rows as measured on an H200 (bench/results/ladders-h200.json, GB/s): block-per-row ran at
# 0.97 of the expert, both below the roof (0.85 and 0.87 of a copy)
SOFTMAX_H200 = dict(zip(LADDERS["softmax-rows"][0], [193, 1644, 3475, 3573], strict=True))


def test_neighbouring_rungs_one_check_cannot_tell_apart_are_a_tied_band():
    ex = CATALOG.get("softmax-rows")
    rungs, record = ladder.rungs(ex), _roofed(SOFTMAX_H200, roof=4086.0)
    assert not any(ladder.at_roof(f) for f in record.values())
    three, four = rungs[2], rungs[3]
    # the expert checked as a learner's file read 0.992 of itself beside itself on an H200, nearer
    # block-per-row's 0.973 by ratio than the top's 1.0 once the check's own spread is counted
    for of_top in (0.96, 0.973, 0.992, 1.0, 1.03):
        p = ladder.place(rungs, record, of_top=of_top)
        assert p is not None and p.band == (three, four) and not p.roofed, (of_top, p)
        assert p.rung == three and p.above is None and p.speedup is None
        assert p.sentence() == (
            "You are on rungs 3 to 4, the top, which ran within 5% of each other on this GPU:"
            " the ideas above rung 3 gain too little here to tell apart."
        )
    # rungs a check can tell apart keep their own places, and the next one's idea is the hint
    two = ladder.place(rungs, record, of_top=1644 / 3573)
    assert two is not None and two.rung == rungs[1] and two.band == () and two.above == three
    assert two.sentence().startswith("You are on rung 2, ")
    # on the H100's figures, where the expert is well clear of rung 3, no band
    apart = _roofed(SOFTMAX_H200 | {"block-per-row": 2600}, roof=4086.0)
    p = ladder.place(rungs, apart, of_top=0.99)
    assert p is not None and p.rung == four and p.band == ()
    # a tie below the top: the rung past the band is the next hint, timed against the figure
    low = _roofed(SOFTMAX_H200 | {"warp-per-row": 3400}, roof=4086.0)
    q = ladder.place(rungs, low, value=3420)
    assert q is not None and q.band == (rungs[1], three, four) and q.above is None
    mid = _roofed(SOFTMAX_H200 | {"block-per-row": 1700}, roof=4086.0)
    r = ladder.place(rungs, mid, value=1650)
    assert r is not None and r.band == (rungs[1], three) and r.above == four
    assert r.speedup == pytest.approx(3573 / 1650)
    assert r.sentence().startswith(
        "You are on rungs 2 to 3, which ran within 5% of each other on this GPU"
    )
    assert f"its idea: {four.idea}." in r.sentence()
