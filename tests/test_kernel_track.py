"""The kernel exercises (catalog orders 6 to 8 and the track, 20..35) without a GPU.

Every CUDA C source in an exercise folder (starter, solution, right/, wrong/, race/, slow/) is
compiled with NVRTC (or nvcc) for the H100, and run on the CPU by gpulab.testing's emulator through
a fake `cupy`: the reference and every unusual-but-correct solution (right/) pass every case, the
starter and every known-wrong solution fail with the promised message, and the timing spec's
learner and library paths compute the same thing; a solution that skips work on a repeated call
fails the grader's check of the timed calls. The GPU run of the same folders is
tests/test_kernel_track_gpu.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from gpulab.emulator import cuda, toolchain
from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.run_check import run_check
from gpulab.lessons.catalog import default_catalog
from gpulab.testing import fake_cupy, kernel_sources, nvrtc

CATALOG = Path(__file__).resolve().parent.parent / "gpulab" / "exercises" / "catalog"
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def _front(folder: Path) -> dict[str, Any]:
    return yaml.safe_load(_FRONT.match((folder / "exercise.md").read_text()).group(1))


def _track() -> list[Path]:
    folders = [p for p in sorted(CATALOG.iterdir()) if (p / "exercise.md").is_file()]
    return [p for p in folders if 20 <= int(_front(p)["order"]) <= 36]


TRACK = _track()
# The CUDA C exercises before the track (first-kernel, grid-2d, conv2d) follow its conventions.
EARLY = [p for p in sorted(CATALOG.iterdir()) if p.name[:3] in ("06-", "07-", "08-", "18-")]
KERNELS = EARLY + TRACK
_EXERCISES = {ex.folder.name: ex for ex in load_catalog()}
IDS = [p.name for p in KERNELS]


def _header(path: Path) -> tuple[str, str]:
    """A variant's first two lines: `# expect: ...` (or `# why: ...`), and `# gpu-only: ...`;
    a wrong/ file's `# family:` line (the loader's) is passed over, as it says nothing of where
    the file can be shown wrong."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("# family:")]
    return tuple((lines + ["", ""])[:2])  # type: ignore[return-value]


_load = kernel_sources.load
_sources = kernel_sources.sources


def _ctx(seed: int = 7) -> api.Context:
    # fill_bytes small: the emulator runs every thread on the CPU, so the "big" case is 64K elements
    return api.Context(
        rng=np.random.default_rng(seed),
        seed=seed,
        gpu=False,
        cupy=False,
        device="cpu",
        fill_bytes=1 << 18,
        check_bytes=1 << 17,
    )


# Exercises whose answer must not depend on the order blocks run in: the emulator runs their
# blocks in a new random order each launch, as a GPU's scheduler may.
SHUFFLED = {"18-deterministic-sum", "36-warp-argmax"}


def _grade(
    folder: Path, solution: Path, seed: int = 7, *, first_failure: bool = False
) -> str | None:
    """The engine's own grader (no timing: the emulator has no clock worth grading); None when
    the file passes, else the failure message."""
    ex = dataclasses.replace(_EXERCISES[folder.name], timed=False)
    in_order = folder.name not in SHUFFLED
    order = contextlib.nullcontext() if in_order else cuda.shuffled_blocks(seed)
    with order:
        result = run_check(ex, solution, seed, _ctx(seed), first_failure=first_failure)
    return None if result.verdict == "pass" else result.message


@pytest.fixture
def cupy_fake(monkeypatch: pytest.MonkeyPatch, _emulated: None) -> ModuleType:
    return fake_cupy.install(monkeypatch)


def test_the_track_has_at_least_twelve_exercises_in_order() -> None:
    orders = [int(_front(p)["order"]) for p in TRACK]
    assert len(TRACK) >= 12
    assert orders == sorted(set(orders))
    for folder, order in zip(TRACK, orders, strict=True):
        assert folder.name == f"{order:02d}-{_front(folder)['id']}"


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_front_matter(folder: Path) -> None:
    meta = _front(folder)
    assert meta["lesson"] in default_catalog(), meta["lesson"]
    assert meta["needs"] == "cupy"
    assert meta["metric"] in ("GB/s", "TFLOP/s")
    g = meta["grades"]
    assert 0 < g["bronze"] < g["silver"] < g["gold"] < 1
    assert 2 <= len(meta["hints"]) <= 5  # the last may point at the explain card
    body = _FRONT.sub("", (folder / "exercise.md").read_text())
    assert body.lstrip().startswith("# ") and "## What is checked" in body
    for wrong in folder.glob("wrong/*.py"):
        assert wrong.read_text().startswith("# expect: "), wrong.name
    assert "TODO" in (folder / "starter.py").read_text()


@pytest.fixture(scope="module")
def _emulated() -> None:
    """Every kernel of the track compiled for the emulator in one compiler run."""
    if toolchain.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    kernel_sources.prebuild(KERNELS)


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_every_kernel_compiles_for_the_h100(folder: Path) -> None:
    """With NVRTC (in-process, fast) every file; with nvcc (a process each) the starter and the
    solution, since the emulator's host compile already sees every file's syntax."""
    tool = nvrtc.available()
    if "RawKernel" not in (folder / "solution.py").read_text():
        pytest.skip("CuPy writes this kernel around the operation; the emulator compiles that")
    if tool is None:
        pytest.skip("neither NVRTC nor nvcc is installed")
    paths = None if tool == "nvrtc" else [folder / "starter.py", folder / "solution.py"]
    sources = _sources(folder, paths)
    assert any(k.startswith("solution.py:") for k in sources)
    errors, seen = {}, set()
    for key, (code, name) in sources.items():
        assert re.search(rf'extern\s+"C"\s+__global__\s+void\s+{name}\s*\(', code), key
        if code not in seen:
            seen.add(code)
            if nvrtc.needs_toolkit_headers(code):
                continue  # cooperative groups: the emulator runs it; the GPU tests compile it
            log = nvrtc.compile_errors(code)
            if log:
                errors[key] = log
    assert not errors, "\n".join(f"{k}:\n{v}" for k, v in errors.items())


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_reference_passes_and_every_wrong_fails(folder: Path, cupy_fake: ModuleType) -> None:
    assert _grade(folder, folder / "solution.py") is None
    assert _grade(folder, folder / "starter.py") is not None, "the starter passes"
    for wrong in sorted(folder.glob("wrong/*.py")) + sorted(folder.glob("race/*.py")):
        first, second = _header(wrong)
        assert first.startswith("# expect: "), wrong.name
        if second.startswith("# gpu-only:"):
            continue  # a race between blocks, a stream, a timed call: see the GPU tests
        alternatives = first.removeprefix("# expect: ").split(" | ")
        message = _grade(folder, wrong, first_failure=True)
        if message is not None and not any(alt in message for alt in alternatives):
            message = _grade(folder, wrong)  # a later input set raised the named message
        assert message is not None, f"{wrong.name} passes"
        assert any(alt in message for alt in alternatives), f"{wrong.name}: {message}"
    for slow in sorted(folder.glob("slow/*.py")):
        assert _grade(folder, slow) is None, f"{slow.name} is slow, not wrong"
    for right in sorted(folder.glob("right/*.py")):
        first, second = _header(right)
        assert first.startswith("# why: "), f"{right.name}: the first line says what is unusual"
        if not second.startswith("# gpu-only:"):
            assert _grade(folder, right) is None, f"{right.name} is right: {_grade(folder, right)}"


def test_every_kernel_exercise_refuses_the_library_answer() -> None:
    """Each kernel exercise has the library's one-call answer among its wrong solutions, and
    requires the learner's own kernel (OWN_KERNEL) to reject it."""
    for folder in KERNELS:
        assert sorted(folder.glob("wrong/library-*.py")), f"{folder.name}: no wrong/library-*.py"
        assert re.search(
            r"^OWN_KERNEL = (True|\"raw\"|\(\"\w+\")", (folder / "check.py").read_text(), re.M
        ), folder
        for wrong in folder.glob("wrong/library-*.py"):
            assert "no kernel of yours ran" in _header(wrong)[0], wrong


def _emulate_timer(spec: api.TimingSpec, calls: int) -> str | None:
    """The grader's check of every timed call (speed._CallChecks), around `calls` calls that
    rotate over the spec's input sets as the timer does; the message of the first wrong one."""
    from gpulab.exercises import speed

    sets = [spec.setup(i) for i in range(spec.sets)]
    turn = [0]

    def rotate() -> None:
        turn[0] = (turn[0] + 1) % len(sets)

    checks = speed._CallChecks(spec, sets, turn, len(sets), every=True)
    before = checks.before(rotate)
    try:
        for _ in range(calls):
            before()
            checks.call()
            checks.after()
    except speed._TimedCallWrong as exc:
        return str(exc)
    return None


SKIPPERS = [p for f in KERNELS for p in sorted(f.glob("wrong/skip-*.py"))]


@pytest.mark.parametrize(
    "path", SKIPPERS, ids=[f"{p.parent.parent.name}/{p.name}" for p in SKIPPERS]
)
def test_a_solution_that_skips_repeated_work_fails_the_timed_calls(
    path: Path, cupy_fake: ModuleType
) -> None:
    """Correct on every case (each case is a fresh buffer), so only timing can catch it: the
    grader's check of each timed call, with the timer's rotation over the input sets."""
    folder = path.parent.parent
    first, second = _header(path)
    assert second.startswith("# gpu-only:")
    assert _grade(folder, path) is None  # the correctness cases alone cannot tell
    check = _load(folder / "check.py")
    ctx = _ctx()
    assert (
        _emulate_timer(check.timing(getattr(_load(folder / "solution.py"), check.ENTRY), ctx), 12)
        is None
    )
    message = _emulate_timer(check.timing(getattr(_load(path), check.ENTRY), ctx), 12)
    # an expect line's alternatives (`a | b`), as the loader reads them: here the emulator's
    # replay of the timed calls sees the unwritten output, a GPU's watch the missing launch
    alternatives = first.removeprefix("# expect: ").split("|")
    assert message is not None and any(a.strip() in message for a in alternatives), message


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_cases_and_references(folder: Path) -> None:
    check = _load(folder / "check.py")
    ctx = _ctx()
    cases = check.cases(ctx)
    assert len(cases) >= 7
    names = [c.name for c in cases]
    assert len(set(names)) == len(names)
    for case in cases:
        want = check.expected(case, ctx)
        want = np.asarray(want["out"] if isinstance(want, dict) else want)  # conv2d: + atol
        assert np.isfinite(want.astype(np.float64)).all(), case.name
        for name, v in case.args.items():
            if name == "kernel":
                continue  # conv2d's filters (sharpen, Sobel) have zero weights on purpose
            if isinstance(v, np.ndarray) and v.dtype.kind == "f":
                assert np.count_nonzero(v) > 0.9 * v.size, f"{case.name}: mostly zeros"
    again = check.cases(_ctx())
    for c1, c2 in zip(cases, again, strict=True):
        for k in c1.args:
            assert np.array_equal(c1.args[k], c2.args[k]), "cases are not drawn from ctx.rng"


@pytest.mark.parametrize("folder", KERNELS, ids=IDS)
def test_timing_learner_and_library_agree(folder: Path, cupy_fake: ModuleType) -> None:
    check = _load(folder / "check.py")
    ctx = _ctx()
    spec = check.timing(getattr(_load(folder / "solution.py"), check.ENTRY), ctx)
    meta = _front(folder)
    assert spec.metric == meta["metric"] and spec.sync == "cupy" and spec.work > 0
    assert spec.ceiling == ("copy" if meta["metric"] == "GB/s" else "matmul:fp32")
    inputs = spec.setup(0)
    assert all(np.count_nonzero(x) for x in inputs[:-1] if isinstance(x, np.ndarray))
    spec.prepare(inputs)
    spec.learner(inputs)
    assert spec.check_call(inputs, None) is None
    spec.prepare(inputs)  # fresh poison, and every input element rewritten: a call that skips work
    assert "differs from" in spec.check_call(inputs, None)
    spec.learner(inputs)
    assert spec.check_call(inputs, None) is None
    inputs[-1][...] = inputs[-1] + 1  # a result the timed call did not compute
    assert "differs from" in spec.check_call(inputs, None)
    first = next(i for i, x in enumerate(inputs) if isinstance(x, np.ndarray))
    assert not np.array_equal(inputs[first], spec.setup(1)[first]), "input sets are not rotated"


def test_the_cli_test_of_the_emulator_covers_the_same_exercises() -> None:
    """tests/exercises/test_emulated_checks.py takes one wrong/ file of each exercise through
    the CLI because this file checks every one: the two must list the same exercises."""
    cli = {ex.folder.name for ex in load_catalog() if "cupy" in ex.needs}
    assert cli == {p.name for p in KERNELS}
