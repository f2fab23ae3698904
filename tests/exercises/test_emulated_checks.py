"""`gpulab ex check` where CuPy cannot run: the CUDA C exercises (`needs: cupy`) on the emulator.

Every CUDA C exercise's reference passes through the CLI (`gpulab ex check NAME`, in this
process with --inline: the job, its emulator hook and the progress store as the worker runs
them) with the verdict saying "emulator: correctness only, no speed grade", and every wrong/ and
race/ solution not marked `# gpu-only:` fails with the message its `# expect:` line names. The
machine is CPU-only here whatever the host has, and the emulator's big case is small (CI time).
One check goes through a real worker, followed by a job that finds no `cupy` left behind.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from gpulab.cli import main
from gpulab.emulator import session as emulator
from gpulab.emulator import toolchain
from gpulab.ex import cli as ex_cli
from gpulab.ex import commands as ex_commands
from gpulab.exercises import job
from gpulab.exercises.loader import find, load_catalog
from gpulab.exercises.outcome import EMULATED_DEVICE
from gpulab.exercises.progress import Progress
from gpulab.exercises.workspace import Workspace
from gpulab.store.database import Store
from gpulab.testing import kernel_sources

pytestmark = pytest.mark.skipif(toolchain.compiler() is None, reason="no host C++ compiler")

KERNELS = [ex for ex in load_catalog() if "cupy" in ex.needs]
LABEL = "emulator: correctness only, no speed grade"
LEFT = Path(__file__).resolve().parents[1] / "fixtures" / "emulator"


def _known_wrong(ex) -> list[Path]:
    """The first wrong/ file and the first race/ file the emulator can show wrong (not
    `# gpu-only:`): what the CLI says of a failure on the emulator. Every one of them is
    checked against its `# expect:` line by the same run_check in tests/test_kernel_track.py
    (these sets of exercises are the same), so here one of each kind is enough."""
    out = []
    for kind in ("wrong", "race"):
        for path in sorted(ex.folder.glob(f"{kind}/*.py")):
            lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("# family:")]
            second = (lines + ["", ""])[1]
            if not second.startswith("# gpu-only:"):
                out.append(path)
                break
    return out


def _expect(path: Path) -> list[str]:
    first = path.read_text().splitlines()[0]
    return [alt.strip() for alt in first.removeprefix("# expect:").split("|") if alt.strip()]


@pytest.fixture(scope="module")
def _built() -> None:
    """Every kernel of these folders compiled in one compiler run (tests/test_kernel_track.py
    builds the same library: in one test session only the first pays for it)."""
    kernel_sources.prebuild([ex.folder for ex in KERNELS])


@pytest.fixture(autouse=True)
def _cpu_box(tmp_path, monkeypatch, _built):
    """No CuPy here, whatever the host has; a compiler for the emulator."""
    inv = ex_commands.cpu_only("no GPU in this test")
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setattr(ex_cli, "machine", lambda: inv)
    monkeypatch.setattr(ex_commands, "machine", lambda: inv)
    monkeypatch.setattr(job, "detect", lambda: inv)  # what the check's job sees
    monkeypatch.setattr(emulator, "CHECK_BYTES", 1 << 17)


def _check(capsys, ex, source: Path) -> tuple[int, dict]:
    mine = Workspace().path(ex)
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(source.read_text())
    code = main(["ex", "check", ex.id, "--inline", "--json", "--seed", "7"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


@pytest.mark.parametrize("ex", KERNELS, ids=[ex.id for ex in KERNELS])
def test_the_reference_passes_and_every_wrong_fails_on_the_emulator(capsys, ex):
    code, data = _check(capsys, ex, ex.solution_path)
    check = data["check"]
    assert code == 0, f"{ex.id}: {check['message']}"
    assert check["emulated"] and check["timing"] is None
    assert LABEL in check["message"] and check["device"] == EMULATED_DEVICE
    assert data["progress"]["emulator_passed"] and data["progress"]["best_grade"] is None
    for path in _known_wrong(ex):
        code, data = _check(capsys, ex, path)
        message = data["check"]["message"]
        assert code == 1, f"{path.name} passed: {message}"
        assert data["check"]["emulated"] and LABEL not in message
        assert any(alt in message for alt in _expect(path)), f"{path.name}: {message}"


def test_the_list_says_where_they_run_and_what_passed_there(capsys):
    ex = find("first-kernel")
    _check(capsys, ex, ex.solution_path)
    assert main(["ex", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr()[0])["exercises"]}
    assert rows["first-kernel"]["emulated"] and rows["first-kernel"]["emulator_passed"]
    assert rows["first-kernel"]["best_grade"] is None and rows["first-kernel"]["available"]
    assert rows["grid-2d"]["emulated"] and rows["grid-2d"]["unavailable"] == ""
    assert not rows["vector-add"]["emulated"]
    assert main(["ex", "list"]) == 0
    out = capsys.readouterr()[0]
    assert "the CUDA C exercises run on the emulator, correctness only, no speed grade" in out
    assert "first-kernel               passed on the emulator" in out
    assert "grid-2d                    not started, on the emulator" in out
    assert "needs CuPy" not in out
    assert main(["ex", "show", "grid-2d"]) == 0
    assert (
        "Here it runs on the CUDA emulator: correctness only, no speed grade."
        in (capsys.readouterr()[0])
    )


def test_a_check_on_the_emulator_leaves_no_cupy_behind(capsys):
    before = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] == "cupy"}
    ex = find("stencil-shared")
    code, data = _check(capsys, ex, ex.folder / "race" / "no-syncthreads.py")
    assert code == 1 and "shared-memory race on tile[" in data["check"]["message"]
    after = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] == "cupy"}
    assert after == before


def test_through_the_worker_and_a_later_job_finds_no_cupy(monkeypatch, tmp_path):
    """The worker as `gpulab ex check` uses it, GPUs hidden from it: the emulated check, then a
    job whose check fails if the emulator's `cupy` is still in the worker's sys.modules."""
    from gpulab.ex.session import Checker

    monkeypatch.setenv("GPULAB_EXERCISES_PATH", str(LEFT))
    ex, later = find("first-kernel"), find("no-cupy-left")
    no_bounds = ex.folder / "wrong" / "no-bounds-check.py"

    async def go():
        async with Checker(env={"CUDA_VISIBLE_DEVICES": ""}) as checker:
            passed, _ = await checker.check(ex, ex.solution_path, 3)
            failed, _ = await checker.check(ex, no_bounds, 3)
            clean, _ = await checker.check(later, later.solution_path, 3)
            return passed, failed, clean

    passed, failed, clean = asyncio.run(go())
    assert passed.passed and passed.emulated and LABEL in passed.message, passed.message
    assert not failed.passed and failed.emulated
    assert any(alt in failed.message for alt in _expect(no_bounds)), failed.message
    assert clean.passed and not clean.emulated, clean.message


def test_progress_keeps_an_emulated_pass_apart_from_a_grade(tmp_path):
    with Store(tmp_path / "p.db") as store:
        progress = Progress(store)
        p = progress.record("first-kernel", "pass", seed=1, grade="pass", emulated=True)
        assert p.passed_ever and p.emulator_passed and p.only_emulated and p.best_grade is None
        p = progress.record("first-kernel", "fail", seed=2, emulated=True)
        assert p.state == "failing" and p.only_emulated
        p = progress.record("first-kernel", "pass", seed=3, grade="silver", fraction=0.7)
        assert p.best_grade == "silver" and p.emulator_passed and not p.only_emulated
        p = progress.record("first-kernel", "pass", seed=4, grade="pass", emulated=True)
        assert p.best_grade == "silver" and p.best_fraction == 0.7  # never lowered, nor raised
        attempts = progress.attempts("first-kernel")
        assert [a.emulated for a in attempts] == [True, False, True, True]
        assert attempts[0].grade is None and attempts[1].grade == "silver"


def test_what_runs_where_the_inventory_says():
    from gpulab.core.devices import EMULATOR, Backend

    ex = find("first-kernel")
    inv = ex_commands.cpu_only("no GPU in this test")
    assert inv.available(EMULATOR) and ex.emulated(inv) and ex.unavailable(inv) == ""
    assert not find("vector-add").emulated(inv)
    inv.backends[EMULATOR] = Backend(EMULATOR, False, reason="no C++ compiler (g++ or clang++)")
    why = ex.unavailable(inv)
    assert not ex.emulated(inv)
    assert why.startswith("needs a GPU with CuPy (no GPU in this test), or, for correctness only")
    assert why.endswith("the CUDA emulator: no C++ compiler (g++ or clang++)")
    inv.backends["cupy"] = Backend("cupy", True, "13.6.0")  # CuPy runs: never the emulator
    inv.backends[EMULATOR] = Backend(EMULATOR, True, "/usr/bin/g++")
    assert ex.unavailable(inv) == "" and not ex.emulated(inv)


def test_emulating_puts_back_whatever_cupy_was_there(monkeypatch):
    """A real CuPy that cannot reach a GPU (stood in for by two modules here) is set aside for
    the block, submodules and all, and is what `import cupy` gives after."""
    import types

    real, real_cuda = types.ModuleType("cupy"), types.ModuleType("cupy.cuda")
    monkeypatch.setitem(sys.modules, "cupy", real)
    monkeypatch.setitem(sys.modules, "cupy.cuda", real_cuda)
    with emulator.emulating(seed=1) as fake:
        import cupy

        assert cupy is fake and fake.__gpulab_fake__ and "cupy.cuda" not in sys.modules
    assert sys.modules["cupy"] is real and sys.modules["cupy.cuda"] is real_cuda
    monkeypatch.delitem(sys.modules, "cupy")
    monkeypatch.delitem(sys.modules, "cupy.cuda")
    with emulator.emulating(seed=1):
        pass
    assert "cupy" not in sys.modules and "cupyx" not in sys.modules


WHAT_RAN = Path(__file__).resolve().parents[1] / "fixtures" / "what_ran"
_NEVER = "if (n < 0) v = __shfl_down_sync(0xffffffffu, v, 16);  // never runs: n is a size\n"


def _dead_shuffle(tmp_path: Path) -> Path:
    """warp-argmax's shared-memory tree (wrong/shared-tree.py) with a shuffle behind a branch no
    lane takes: the compiled code holds a shuffle, so on a GPU the rule that reads it passes."""
    tree = find("warp-argmax").folder / "wrong" / "shared-tree.py"
    text = tree.read_text().replace("    sv[t] = v;\n", "    " + _NEVER + "    sv[t] = v;\n", 1)
    assert _NEVER in text
    path = tmp_path / "dead-shuffle.py"
    path.write_text(text.replace("# expect: has no warp shuffle", "# expect: that runs", 1))
    return path


@pytest.mark.parametrize("exercise", ["stencil-shared", "warp-argmax"])
def test_a_property_behind_a_branch_no_thread_takes_counts_for_nothing(capsys, tmp_path, exercise):
    """On the emulator the shared accesses and shuffles a launch made are counted as it runs: a
    tile or a shuffle that only a dead branch holds fails, though the compiled code has it."""
    if exercise == "warp-argmax":
        path = _dead_shuffle(tmp_path)
    else:
        path = WHAT_RAN / "stencil-shared-dead-tile.py"
    code, data = _check(capsys, find(exercise), path)
    message = data["check"]["message"]
    assert code == 1, f"{path.name} passed: {message}"
    assert any(alt in message for alt in _expect(path)), message
