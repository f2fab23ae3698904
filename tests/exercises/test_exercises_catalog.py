"""Every exercise in the catalog: our solution passes, every known-wrong solution is rejected
with the message its `# expect:` line names, every unusual correct solution (`right/*.py`, first
line `# why: <what is unusual>`) passes. Exercises that need a GPU run under -m gpu."""

from __future__ import annotations

import re

import exercise_checks
import pytest

from gpulab.exercises.loader import load_catalog

CATALOG = load_catalog()


_inventory = exercise_checks.inventory
_check = exercise_checks.check
_marks = exercise_checks.marks


@pytest.fixture(scope="module", autouse=True)
def _close_worker():
    yield
    exercise_checks.close_worker()


SEEDS = (7, 2024)


def _seeded(files: list[tuple]) -> list:
    """(seed, exercise, file) params: a file whose check runs on this machine's GPU at both seeds
    (the GPU suite runs apart from CI); a CPU check's file at one of them, 7 and 2024 in turn, so both
    input sets keep being drawn across the catalog. Both seeds for every CPU file cost CI 90 of
    its 900 seconds on two cores (ddp's and the collectives' rank starts, Triton's interpreter)."""
    out = []
    for i, (ex, path, name) in enumerate(files):
        seeds = SEEDS if exercise_checks.runs_on_a_gpu_here(ex) else (SEEDS[i % 2],)
        out += [
            pytest.param(seed, ex, path, id=f"{seed}-{ex.id}/{name}", marks=_marks(ex))
            for seed in seeds
        ]
    return out


SOLUTIONS = [pytest.param(ex, id=ex.id, marks=_marks(ex)) for ex in CATALOG]
WRONGS = _seeded([(ex, w, w.name) for ex in CATALOG for w in ex.wrong])
# right/*.py: unusual but correct solutions (first line `# why: ...`), which must pass.
RIGHTS = _seeded(
    [
        (ex, p, f"right/{p.name}")
        for ex in CATALOG
        for p in sorted((ex.folder / "right").glob("*.py"))
    ]
)


def test_the_catalog_has_exercises():
    assert len(CATALOG) >= 1
    assert CATALOG.get("vector-add").order == 1


def test_every_graded_exercise_declares_its_intensity():
    # Without one its explain card has no roofline point: intensity in exercise.md.
    missing = [ex.id for ex in CATALOG if ex.graded_by_speed and ex.intensity is None]
    assert not missing, f"graded by speed without an intensity in exercise.md: {missing}"
    assert all(ex.ceiling for ex in CATALOG if ex.graded_by_speed)


@pytest.mark.parametrize("ex", SOLUTIONS)
def test_solution_passes(ex):
    why = ex.unavailable(_inventory())
    if why:
        pytest.skip(why)
    result = _check(ex, ex.solution_path, 1234)
    assert result.verdict == "pass", f"{ex.id}: {result.message}"
    assert result.cases and all(c.passed for c in result.cases)
    # Triton without a GPU: its interpreter checks correctness only, and the verdict says so
    interpreted = "triton" in ex.needs and not _inventory().has_gpu
    if interpreted:
        assert "interpreter: correctness only, no speed grade" in result.message
        assert result.timing is None and result.grade == "pass"
    elif ex.timed:
        assert result.timing is not None and result.timing["learner"]["value"] > 0
        assert result.grade in ("pass", "bronze", "silver", "gold")


@pytest.mark.parametrize("ex", SOLUTIONS)
def test_starter_fails(ex):
    why = ex.unavailable(_inventory())
    if why:
        pytest.skip(why)
    result = _check(ex, ex.starter_path, 99)
    assert result.verdict == "fail" and result.message


@pytest.mark.parametrize(("seed", "ex", "wrong"), WRONGS)
def test_wrong_solution_is_rejected(seed, ex, wrong):
    why = ex.unavailable(_inventory())
    if why:
        pytest.skip(why)
    result = exercise_checks.check_wrong(ex, wrong, seed)
    if wrong.emulator_only and exercise_checks.needs_device(ex):
        # a known limit (docs/exercises.md): on a GPU the check reads the compiled code, which
        # holds what the emulator saw was never used; the test says so by what it asserts
        assert result.verdict == "pass" or wrong.matches(result.message), result.message
        return
    if wrong.cpu_only and exercise_checks.has_cuda():
        # its shortcut is taken on CPU tensors only: on a GPU it does the exercise's work
        assert result.verdict == "pass" or wrong.matches(result.message), result.message
        return
    assert result.verdict == "fail", f"{wrong.path} passed: {result.message}"
    assert wrong.matches(result.message), (
        f"{wrong.path}: expected {wrong.expect!r} in {result.message!r}"
    )


@pytest.mark.parametrize(("seed", "ex", "right"), RIGHTS)
def test_right_solution_passes(seed, ex, right):
    """A correct solution written another way than ours (a false rejection once) passes."""
    first = right.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# why: ") and len(first) > 10, f"{right}: first line '# why: ...'"
    why = ex.unavailable(_inventory())
    if why:
        pytest.skip(why)
    result = _check(ex, right, seed)
    assert result.verdict == "pass", f"{right} was rejected (seed {seed}): {result.message}"


def test_every_exercise_links_a_real_lesson():
    from gpulab.lessons.catalog import load_catalog as load_lessons

    lessons = load_lessons()
    for ex in CATALOG:
        assert ex.lesson in lessons, f"{ex.folder}/exercise.md: unknown lesson {ex.lesson!r}"


def test_every_graded_statement_says_what_its_grades_ask():
    """A timed exercise's statement gives the learner its grade lines as its front matter does
    ("bronze from 0.35, silver from 0.6, gold from 0.85"), as fractions of our own solution's
    speed, naming the expert where the yardstick is one. No statement grades against a share of
    the ceiling any more: that rule was tuned on one card."""
    lines = re.compile(r"\b(bronze|silver|gold) (?:is )?from (\d+(?:\.\d+)?)")
    for ex in CATALOG:
        text = " ".join(ex.statement.split())
        for stale in ("fractions of the ceiling", "Gold asks for", "gold at 0.", "MARGIN"):
            assert stale not in text, f"{ex.folder}: {stale!r}"
        if not ex.timed:
            continue
        said = {grade: float(v) for grade, v in lines.findall(text)}
        assert said == dict(ex.grades), f"{ex.folder}: statement {said}, front matter {ex.grades}"
        assert "as a fraction of" in text, ex.folder
        assert ("our expert solution" in text) == ex.has_expert, ex.folder


def test_every_exercise_has_wrong_solutions_and_hints():
    for ex in CATALOG:
        assert len(ex.wrong) >= 2, f"{ex.folder}: at least two known-wrong solutions"
        assert 2 <= len(ex.hints) <= 5, f"{ex.folder}: 2-5 hints"


def _code_lines(source: str) -> set[str]:
    """The statements of a file, each as it would be typed into a hint: comments (`#`, `//`)
    dropped, all whitespace and quotes removed, a trailing `;`, `{`, `:` or `,` stripped."""
    lines = set()
    for raw in source.splitlines():
        line = re.split(r"\s#\s|//", raw)[0] if not raw.lstrip().startswith("#define") else raw
        if line.lstrip().startswith("#"):
            continue
        text = re.sub(r"[\s\"'`]", "", line).rstrip(";{:,")
        lines.add(text)
    return lines


def _solution_lines_in(hint: str, solution: str, starter: str) -> list[str]:
    """The lines of `solution` that `hint` repeats whole (whitespace aside) and the starter does
    not already hold. A bare call without arguments (`__syncthreads()`, `scaler.update()`) names
    an API, which is what a hint is for, and lines under 9 characters (`out[i] = s;`) say
    nothing on their own: neither counts."""
    said = re.sub(r"[\s\"'`]", "", hint)
    given = _code_lines(starter)
    return sorted(
        line
        for line in _code_lines(solution) - given
        if len(line) >= 9 and not re.fullmatch(r"[\w.]+\(\)", line) and line in said
    )


def test_no_hint_is_a_line_of_the_solution():
    """Hints lead to the idea; `gpulab ex solution` is there for the code. A hint that ends in
    the line to type (the kernel track's last hints once did) leaves the learner nothing to do."""
    found = []
    for ex in CATALOG:
        solution, starter = ex.solution_path.read_text(), ex.starter_path.read_text()
        for n, hint in enumerate(ex.hints, 1):
            for line in _solution_lines_in(hint, solution, starter):
                found.append(f"{ex.folder}: hint {n} holds the solution's line {line!r}")
    assert not found, "\n".join(found)


def test_the_hint_check_sees_code_lines_and_lets_ideas_pass():
    solution = (
        "if (i < n) out[i] = a[i] + b[i];\n"
        "    scaler.update()\n"
        "    __syncthreads();\n"
        '    "y = sqrt(a)",  # post_map_expr\n'
        "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    )
    starter = "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    assert _solution_lines_in("Then: `if (i<n)  out[i] = a[i] + b[i];`", solution, starter) == [
        "if(i<n)out[i]=a[i]+b[i]"
    ]
    assert _solution_lines_in('post_map_expr "y = sqrt(a)"', solution, starter) == ["y=sqrt(a)"]
    idea = "Wait at __syncthreads(), then `scaler.update()`; the index is blockIdx.x * blockDim.x + threadIdx.x"
    assert _solution_lines_in(idea, solution, starter) == []  # API names; the starter's own line


def test_the_catalog_is_loaded_once_and_still_sees_an_edit(tmp_path):
    """The TUI lists the catalog after every check: an unchanged folder is not parsed again, and
    a contributor's edit (or a broken file) is seen on the next load."""
    import shutil
    import time

    from gpulab.exercises import loader as cat_mod

    src = cat_mod.load_catalog().exercises[0].folder
    shutil.copytree(src, tmp_path / src.name)
    first = cat_mod.load_catalog(tmp_path).exercises[0]
    assert cat_mod.load_catalog(tmp_path).exercises[0] is first  # from the cache
    md = tmp_path / src.name / "exercise.md"
    time.sleep(0.01)
    md.write_text(md.read_text().replace(f"title: {first.title}", "title: Edited title", 1))
    again = cat_mod.load_catalog(tmp_path).exercises[0]
    assert again is not first and again.title == "Edited title"
    (tmp_path / src.name / "check.py").write_text("ENTRY = 'x'\n")
    with pytest.raises(cat_mod.ExerciseFormatError, match="check.py"):
        cat_mod.load_catalog(tmp_path)


def test_every_kernel_exercise_has_a_hint_that_points_at_the_explain_card():
    """A kernel-track exercise (OWN_KERNEL, CUDA C: not the Triton ones) has a hint that leads
    to its idea through a line of the explain card (F4 or `gpulab ex explain`)."""
    missing = []
    for ex in CATALOG:
        check = ex.check_path.read_text(encoding="utf-8")
        # OWN_KERNEL = True, or a tuple of the kernel kinds the exercise asks for
        if not re.search(r"^OWN_KERNEL = (True|\()", check, re.M) or "triton" in ex.id:
            continue
        names = [h for h in ex.hints if "F4" in h or f"gpulab ex explain {ex.id}" in h]
        if not names:
            missing.append(ex.folder)
    assert not missing, f"no hint names the explain card: {missing}"
