"""Every wrong/ file names its family (`# family:` on its second line), and every family of
shortcut has at least two wrong/ files in each type of exercise it can reach: a family with one
example in a type is one trick stopped there, not the family.

The type is read from the Exercise, not listed by hand, so a new exercise counts at once:
`kernel` (CUDA C through CuPy), `triton`, `ranked` (DDP and the collectives, run on N ranks),
`gpu-torch` (PyTorch that needs a GPU) and `torch` (PyTorch that also runs on the CPU).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from gpulab.exercises.exercise_format import ExerciseFormatError
from gpulab.exercises.loader import FAMILIES, Exercise, load_catalog, load_exercise

TYPES = ("kernel", "triton", "ranked", "gpu-torch", "torch")
MIN_PER_PAIR = 2

# Which types each family reaches, and why the others are left out (an absent type is a claim
# that the family has no shortcut there, not a gap: a gap is a type listed here with fewer than
# two files).
AFFECTED: dict[str, frozenset[str]] = {
    # gpu-torch's exercises (bandwidth, honest-timing, streams-overlap, cuda-graphs) teach how to
    # measure and schedule torch's own CUDA work: the library is their subject, not a stand-in
    "library": frozenset({"kernel", "triton", "ranked", "torch"}),
    # every type is timed on a GPU, and a call can count itself or look for the timer anywhere
    "timed-vs-checked": frozenset(TYPES),
    # every type times calls on inputs it came back to, so an answer kept from before pays
    "memo": frozenset(TYPES),
    # only where a rule reads a property from the source or the launch: the PTX, the grid and the
    # shared memory of a CUDA C kernel; DDP's wrapper, hooks and requests. Triton's checks read
    # no such property (the allowlist and the output are all), nor do the single-process torch
    # ones, whose rules watch what ran (hooks, dispatch modes, the profiler)
    "property-proxy": frozenset({"kernel", "ranked"}),
    # a result that is read after the call: a CUDA C kernel left running on a stream nobody
    # waits for, a Triton or torch output finished by a handler, a tensor or a figure computed
    # when read. The ranked functions write in place and return nothing a check reads later
    # (a DDP hook's future is DDP's to wait on, inside the backward)
    "lazy": frozenset({"kernel", "triton", "gpu-torch", "torch"}),
    # the grader's own code, constants and counters share every process a check runs in
    "writes-what-check-reads": frozenset(TYPES),
    # Triton's checks read no taught property but the answer and the learner's own kernel: a
    # fusion split into two kernels, or a softmax shifted by its first score instead of its max,
    # passes them (found writing this table; a wrong/ file must be rejected, so those wait for a
    # rule). Only a loosening the answer shows (triton-matmul's float16 steps) is held there
    "loose-property": frozenset({"kernel", "ranked", "gpu-torch", "torch"}),
    # threads, processes and memory by address exist wherever the learner's Python runs
    "escape": frozenset(TYPES),
}


def exercise_type(ex: Exercise) -> str:
    """The type of exercise `ex` is, for coverage (one of TYPES)."""
    if "cupy" in ex.needs:
        return "kernel"
    if "triton" in ex.needs:
        return "triton"
    if ex.ranked:
        return "ranked"
    if "gpu" in ex.needs:
        return "gpu-torch"
    return "torch"


def coverage(exercises: Iterable[Exercise]) -> Counter[tuple[str, str]]:
    """(family, type) -> how many wrong/ files."""
    return Counter((w.family, exercise_type(ex)) for ex in exercises for w in ex.wrong)


def shortfall(counts: Counter[tuple[str, str]]) -> list[str]:
    """Each affected (family, type) pair with fewer than MIN_PER_PAIR files, with its count."""
    return [
        f"{family} x {kind}: {counts[family, kind]}"
        for family, kinds in AFFECTED.items()
        for kind in TYPES
        if kind in kinds and counts[family, kind] < MIN_PER_PAIR
    ]


CATALOG = load_catalog()


def test_the_table_names_the_loaders_families():
    assert set(AFFECTED) == set(FAMILIES) - {"mistake"}
    assert all(kinds <= set(TYPES) and kinds for kinds in AFFECTED.values())


def test_every_exercise_has_a_type_and_every_type_an_exercise():
    assert {exercise_type(ex) for ex in CATALOG} == set(TYPES)


def test_every_wrong_file_names_a_known_family():
    for ex in CATALOG:
        for w in ex.wrong:
            second = w.path.read_text(encoding="utf-8").splitlines()[1]
            assert second == f"# family: {w.family}", w.path
            assert w.family in FAMILIES, w.path


def test_every_family_has_two_wrong_files_in_each_type_it_reaches():
    missing = shortfall(coverage(CATALOG))
    assert not missing, "fewer than two wrong/ files: " + "; ".join(missing)


def test_the_rule_fails_when_a_label_goes():
    counts = coverage(CATALOG)
    for family, kinds in AFFECTED.items():
        kind = sorted(kinds)[0]
        fewer = counts.copy()
        fewer[family, kind] = MIN_PER_PAIR - 1
        assert f"{family} x {kind}: {MIN_PER_PAIR - 1}" in shortfall(fewer)


def _fixture(tmp_path, second_line: str | None):
    """A copy of the fixture exercise whose wrong/triples.py has `second_line` (None: no line)
    where its family is."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "exercises" / "901-double"
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    path = folder / "wrong" / "triples.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    if second_line is None:
        del lines[1]
    else:
        lines[1] = second_line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("second", "says"),
    [
        ("# family: shortcut", "unknown family 'shortcut'"),
        (None, "the second line must be '# family:"),
        ("# emulator-only: a limit where the family belongs", "the second line must be"),
    ],
)
def test_a_missing_or_unknown_family_is_a_format_error_naming_the_file(tmp_path, second, says):
    folder = _fixture(tmp_path, second)
    with pytest.raises(ExerciseFormatError) as err:
        load_exercise(folder)
    assert "triples.py" in str(err.value) and says in str(err.value)


def test_a_limit_line_follows_the_family(tmp_path):
    folder = _fixture(tmp_path, "# family: mistake\n# cpu-only: a NumPy path for CPU tensors")
    (wrong,) = [w for w in load_exercise(folder).wrong if w.name == "triples"]
    assert wrong.family == "mistake" and wrong.cpu_only == "a NumPy path for CPU tensors"
