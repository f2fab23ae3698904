"""The exercise catalog: one folder per exercise under `catalog/`, loaded and validated.

Headless and light: nothing here imports torch, CuPy or the exercise's own `check.py` (checks are
read with `ast`, not imported), so the UI process and `gpulab ex` list exercises in milliseconds.
An `Exercise` carries every fact about the exercise that code outside the grader asks for: the
metric and whether it is graded by speed, the ceiling it is graded against (read here, once,
from check.py's timing spec), its arithmetic intensity, whether the check times it; the
grader, the explain card, the bench and the TUI all read them from it.
Loading is strict, because a typo in a folder (a grade out of order, a wrong solution without its
`# expect:` line) is a broken exercise, not a cosmetic problem; every error names the file.
The folder format is documented in api.py and docs/exercises.md.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.core.devices import EMULATOR, cupy_hint
from gpulab.core.errors import BadInput
from gpulab.core.front_matter import read_front_matter
from gpulab.exercises.exercise_format import (
    DEFAULT_TIME_LIMIT_S,
    SPEED_METRICS,
    ExerciseFormatError,
    validate_meta,
)
from gpulab.exercises.intensity import Intensity

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"
# More exercise folders (a contributor's work in progress, tests): a path list like PATH.
EXTRA_ENV = "GPULAB_EXERCISES_PATH"
REQUIRED_CHECK_NAMES = ("ENTRY", "cases", "expected", "run")
_FOLDER = re.compile(r"^(\d{2,3})-([a-z0-9][a-z0-9-]*)$")
_EXPECT = re.compile(r"^#\s*expect:\s*(.+?)\s*$")
_WHY = re.compile(r"^#\s*why:\s*(.+?)\s*$")
_FAMILY = re.compile(r"^#\s*family:\s*(\S+)\s*$")
# What a wrong/ file's `# family:` line may name: eight families of shortcut, and `mistake` for
# an honest wrong answer; tests/exercises/test_families.py counts coverage by them, so a key is
# one token that a table and a grep both keep whole. docs/exercises.md explains each.
FAMILIES = (
    "library",
    "timed-vs-checked",
    "memo",
    "property-proxy",
    "lazy",
    "writes-what-check-reads",
    "loose-property",
    "escape",
    "mistake",
)
_CEILING = re.compile(r"^(copy|h2d|d2h|link|matmul:[a-z0-9]+)$")
# The ceiling a check grades against when its timing spec names none (kernel_checks.spec's).
DEFAULT_CEILING = {"GB/s": "copy", "TFLOP/s": "matmul:fp32"}
# The calls of a check.py that build its timing spec (api.TimingSpec, kernel_checks.spec, ...).
_SPEC_CALLS = ("TimingSpec", "spec", "Timed")  # Timed: a collective check's (collective_checks)


class UnknownExercise(BadInput, KeyError):
    """An exercise id, folder name or number that matches none; its message lists the known ones."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(name)

    def __str__(self) -> str:
        close = difflib.get_close_matches(self.name, self.known, n=1, cutoff=0.5)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"unknown exercise '{self.name}'{hint} (see gpulab ex)"


@dataclass(frozen=True)
class Wrong:
    """A known-wrong solution: the grader must reject it with a message containing `expect`."""

    name: str  # the file's stem: "no-bounds-check"
    path: Path
    expect: str  # alternatives separated by " | ": a write past the end may corrupt a
    # neighbour (a wrong value) or fault (an illegal address), depending on the allocator
    # "# family: <key>" on the second line, one of FAMILIES: which shortcut (or an honest
    # mistake) the file is, so coverage per family and exercise type can be counted
    family: str = "mistake"
    # "# emulator-only: why" on the third line: rejected from what the CPU emulator counts as
    # the kernel runs; a GPU's check reads the compiled code, which cannot show it (a known
    # limit, listed in docs/exercises.md)
    emulator_only: str = ""
    # "# cpu-only: why" on the third line: a shortcut only where the inputs are on the CPU (a
    # NumPy path for CPU tensors); on a GPU the same file does the work the exercise asks
    cpu_only: str = ""

    def matches(self, message: str) -> bool:
        """Whether the grader's message names this mistake (any of the alternatives)."""
        text = message.lower()
        return any(alt.strip().lower() in text for alt in self.expect.split("|") if alt.strip())


@dataclass(frozen=True)
class Right:
    """An unusual correct solution: the grader must pass it (a false rejection is a bug)."""

    name: str
    path: Path
    why: str  # what is unusual about it: "a RawModule in place of a RawKernel"


@dataclass(frozen=True, eq=False)
class Exercise:
    """One exercise as its folder declares it: front matter, paths and the check's entry point."""

    id: str
    title: str
    order: int
    lesson: str
    needs: tuple[str, ...]
    metric: str
    grades: Mapping[str, float]
    hints: tuple[str, ...]
    statement: str
    folder: Path
    wrong: tuple[Wrong, ...] = ()
    right: tuple[Right, ...] = ()
    entry: str = ""
    time_limit: float = DEFAULT_TIME_LIMIT_S
    summary: str = ""
    timed: bool = field(default=False)  # check.py defines timing()
    intensity: Intensity | None = None  # FLOPs and bytes of the graded work (exercise.md)
    ceiling: str = ""  # the calibrated figure a GPU grades against: copy, h2d, matmul:fp16...
    ranked: bool = False  # check.py defines rank(): the learner's function runs on N ranks

    @property
    def graded_by_speed(self) -> bool:
        """Whether a passing check is graded by its speed (metric GB/s or TFLOP/s)."""
        return self.metric in SPEED_METRICS

    @property
    def name(self) -> str:
        """The folder's name, `NN-id`: what the learner sees beside the id."""
        return self.folder.name

    @property
    def check_path(self) -> Path:
        """The exercise's check.py."""
        return self.folder / "check.py"

    @property
    def starter_path(self) -> Path:
        """The file a learner starts from."""
        return self.folder / "starter.py"

    @property
    def solution_path(self) -> Path:
        """The reference solution."""
        return self.folder / "solution.py"

    @property
    def expert_path(self) -> Path:
        """An expert's solution (kernel exercises): what gold is measured against."""
        return self.folder / "expert.py"

    @property
    def has_expert(self) -> bool:
        return self.expert_path.is_file()

    @property
    def file_name(self) -> str:
        """The learner's file in the workspace: `01_vector_add.py`."""
        return f"{self.order:02d}_{self.id.replace('-', '_')}.py"

    def unavailable(self, inventory: Any) -> str:
        """ "" when this machine can run the exercise, else why not (one line, with the fix)."""
        return unavailable(self.needs, inventory)

    def emulated(self, inventory: Any) -> bool:
        """Whether a check of this exercise runs on the CUDA emulator here (correctness only):
        a CUDA C exercise where CuPy cannot run and a C++ compiler can build its kernels."""
        return emulates(self.needs, inventory)

    def describe(self) -> dict[str, Any]:
        """The exercise as JSON-ready data (for `gpulab ex list --json`)."""
        return {
            "id": self.id,
            "name": self.name,
            "title": self.title,
            "order": self.order,
            "lesson": self.lesson,
            "needs": list(self.needs),
            "metric": self.metric,
            "grades": dict(self.grades),
            "has_expert": self.has_expert,
            "hints": len(self.hints),
            "file": self.file_name,
            "time_limit_s": self.time_limit,
            "ceiling": self.ceiling or None,
            "intensity": self.intensity.to_dict() if self.intensity else None,
        }


def emulates(needs: tuple[str, ...], inventory: Any) -> bool:
    """Whether an exercise that needs `needs` runs on the CUDA emulator with `inventory`."""
    return "cupy" in needs and not inventory.available("cupy") and inventory.available(EMULATOR)


def unavailable(needs: tuple[str, ...], inventory: Any) -> str:
    """Why an exercise that needs `needs` cannot run with `inventory`, or empty when it can."""
    if "cupy" in needs and not inventory.available("cupy") and not emulates(needs, inventory):
        why = inventory.reason(EMULATOR) or "no C++ compiler"
        emulator = f"or, for correctness only, the CUDA emulator: {why}"
        if not inventory.has_gpu:
            return f"needs a GPU with CuPy ({inventory.gpu_reason or 'no GPU'}), {emulator}"
        return f"needs CuPy ({inventory.reason('cupy') or cupy_hint()}), {emulator}"
    if "gpu" in needs and not inventory.available("torch-cuda"):
        if not inventory.has_gpu:
            return f"needs a GPU: {inventory.gpu_reason or 'no GPU'}"
        return f"needs PyTorch with CUDA: {inventory.reason('torch-cuda')}"
    if "triton" in needs and not triton_installed():
        return "needs Triton: pip install triton (Linux; its interpreter runs without a GPU)"
    return ""


def triton_installed() -> bool:
    """Whether Triton can be imported here; asked without importing it (the UI process lists
    the catalog and must not pay for, or be changed by, that import)."""
    return importlib.util.find_spec("triton") is not None


@dataclass
class Catalog:
    """Every exercise found, in order."""

    exercises: list[Exercise]

    def __iter__(self) -> Iterator[Exercise]:
        return iter(self.exercises)

    def __len__(self) -> int:
        return len(self.exercises)

    def ids(self) -> list[str]:
        """The exercise ids, in order."""
        return [e.id for e in self.exercises]

    def get(self, name: str) -> Exercise:
        """By id (`vector-add`), folder name (`01-vector-add`) or order (`1`)."""
        key = name.strip().lower()
        for ex in self.exercises:
            if key in (ex.id, ex.name) or (key.isdigit() and int(key) == ex.order):
                return ex
            if key == ex.file_name.lower() or key == ex.file_name[:-3].lower():
                return ex
        raise UnknownExercise(name, self.ids())


# --- loading ------------------------------------------------------------------------------------


def roots() -> list[Path]:
    """The folders exercises are loaded from: the built-in catalog, then those in the environment
    variable."""
    extra = [Path(p) for p in os.environ.get(EXTRA_ENV, "").split(os.pathsep) if p.strip()]
    return [CATALOG_DIR, *extra]


def load_catalog(*dirs: Path | str) -> Catalog:
    """Every exercise folder under `dirs` (default: the package's catalog and $GPULAB_EXERCISES_PATH),
    in order. Raises ExerciseFormatError naming the first broken file."""
    found: list[Exercise] = []
    for root in [Path(d) for d in dirs] or roots():
        if not root.is_dir():
            if root != CATALOG_DIR:
                raise ExerciseFormatError(root, "not a folder of exercises")
            continue
        for folder in sorted(root.iterdir()):
            if folder.is_dir() and not folder.name.startswith((".", "_")):
                found.append(_load_cached(folder))
    seen: dict[str, Exercise] = {}
    orders: dict[int, Exercise] = {}
    for ex in found:
        if ex.id in seen:
            raise ExerciseFormatError(ex.folder, f"id '{ex.id}' is also {seen[ex.id].folder}")
        if ex.order in orders:
            raise ExerciseFormatError(
                ex.folder, f"order {ex.order} is also {orders[ex.order].folder}"
            )
        seen[ex.id] = ex
        orders[ex.order] = ex
    return Catalog(sorted(found, key=lambda e: e.order))


def find(name: str) -> Exercise:
    """One exercise by id, folder name, order or file name, reading only its own folder (the
    worker does this for every check); UnknownExercise, with a suggestion, when none matches."""
    key = name.strip().lower()
    for root in roots():
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            m = _FOLDER.match(folder.name)
            if not m or not folder.is_dir():
                continue
            order, ident = int(m.group(1)), m.group(2)
            file_stem = f"{order:02d}_{ident.replace('-', '_')}"
            if key in (ident, folder.name, file_stem, f"{file_stem}.py") or (
                key.isdigit() and int(key) == order
            ):
                return load_exercise(folder)
    return load_catalog().get(name)  # raises UnknownExercise with the full list of ids


# folder -> (what its files looked like, the exercise loaded from them). Loading parses every
# check.py (ast), about 5 ms a folder: the TUI lists the catalog after every check, and a
# contributor's edit is still seen at once, because any change of a file's size or time counts.
_LOADED: dict[Path, tuple[tuple[Any, ...], Exercise]] = {}


def _signature(folder: Path) -> tuple[Any, ...]:
    seen: list[tuple[str, int, int]] = []
    for where in (folder, folder / "wrong", folder / "right"):
        try:
            with os.scandir(where) as entries:
                for e in entries:
                    if e.is_file():
                        st = e.stat()
                        seen.append((f"{where.name}/{e.name}", st.st_mtime_ns, st.st_size))
        except OSError:
            seen.append((where.name, -1, -1))
    return tuple(sorted(seen))


def _load_cached(folder: Path) -> Exercise:
    sig = _signature(folder)
    hit = _LOADED.get(folder)
    if hit is not None and hit[0] == sig:
        return hit[1]
    ex = load_exercise(folder)
    _LOADED[folder] = (sig, ex)
    return ex


def load_exercise(folder: Path) -> Exercise:
    """The exercise in `folder`; ExerciseFormatError says what is wrong with it."""
    m = _FOLDER.match(folder.name)
    if not m:
        raise ExerciseFormatError(folder, "an exercise folder is named NN-id, e.g. 01-vector-add")
    md = folder / "exercise.md"
    meta, statement = _front_matter(md)
    fields = validate_meta(meta, md)
    if fields["id"] != m.group(2):
        raise ExerciseFormatError(md, f"id '{fields['id']}' differs from the folder's '{m[2]}'")
    if fields["order"] != int(m.group(1)):
        raise ExerciseFormatError(md, f"order {fields['order']} differs from the folder's {m[1]}")
    for name in ("starter.py", "solution.py", "check.py"):
        if not (folder / name).is_file():
            raise ExerciseFormatError(folder / name, "missing")
    check = _parse(folder / "check.py")
    names = _top_level_names(check)
    missing = [n for n in REQUIRED_CHECK_NAMES if n not in names]
    if missing:
        raise ExerciseFormatError(folder / "check.py", f"does not define {', '.join(missing)}")
    entry = _entry(check, folder / "check.py")
    ceiling = _ceiling(check, folder / "check.py", fields["metric"])
    experts = ["expert.py"] if (folder / "expert.py").is_file() else []
    for name in ("starter.py", "solution.py", *experts):
        if entry not in _top_level_names(_parse(folder / name)):
            raise ExerciseFormatError(folder / name, f"does not define {entry}(), the ENTRY")
    wrong = tuple(_wrong(p) for p in sorted((folder / "wrong").glob("*.py")))
    right = tuple(_right(p) for p in sorted((folder / "right").glob("*.py")))
    return Exercise(
        **fields,
        statement=statement,
        folder=folder,
        wrong=wrong,
        right=right,
        entry=entry,
        timed="timing" in names,
        ceiling=ceiling,
        ranked="rank" in names,
    )


def _front_matter(path: Path) -> tuple[Mapping[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ExerciseFormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    front = read_front_matter(text, path, ExerciseFormatError)
    body = front.body.strip()
    if not body:
        raise ExerciseFormatError(path, "no statement after the front matter")
    return front.meta, body


def _parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise ExerciseFormatError(path, f"line {exc.lineno}: {exc.msg}") from None
    except OSError as exc:
        raise ExerciseFormatError(path, f"cannot be read: {exc.strerror or exc}") from None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _entry(tree: ast.Module, check: Path) -> str:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if isinstance(node, ast.Assign | ast.AnnAssign) and any(
            isinstance(t, ast.Name) and t.id == "ENTRY" for t in targets
        ):
            value = node.value
            if isinstance(value, ast.Constant) and str(value.value).isidentifier():
                return str(value.value)
    raise ExerciseFormatError(check, "ENTRY must be a function name in quotes, e.g. ENTRY = 'add'")


def _ceiling(tree: ast.Module, check: Path, metric: str) -> str:
    """The ceiling the check's timing spec grades against ("" for an exercise not graded by
    speed); a spec whose metric differs from exercise.md's is a broken exercise. A ceiling chosen
    by a condition (`"matmul:fp16" if ctx.gpu else "matmul:fp32"`) is the first, the GPU's."""
    if metric not in SPEED_METRICS:
        return ""
    found = DEFAULT_CEILING[metric]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _SPEC_CALLS:
            continue
        for kw in node.keywords:
            value = kw.value.body if isinstance(kw.value, ast.IfExp) else kw.value
            if not isinstance(value, ast.Constant) or not isinstance(value.value, str):
                continue
            if kw.arg == "metric" and value.value != metric:
                raise ExerciseFormatError(
                    check, f"times in {value.value}, but exercise.md's metric is {metric}"
                )
            if kw.arg == "ceiling":
                if not _CEILING.match(value.value):
                    raise ExerciseFormatError(
                        check,
                        f"ceiling {value.value!r} is not copy, h2d, d2h, link or matmul:<dtype>",
                    )
                found = value.value
    return found


def _wrong(path: Path) -> Wrong:
    try:
        with path.open(encoding="utf-8") as f:
            first, second, third = f.readline(), f.readline(), f.readline()
    except OSError as exc:
        raise ExerciseFormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    m = _EXPECT.match(first.strip())
    if not m:
        raise ExerciseFormatError(path, "the first line must be '# expect: <text of the message>'")
    fam = _FAMILY.match(second.strip())
    if not fam:
        raise ExerciseFormatError(
            path, f"the second line must be '# family: <{'|'.join(FAMILIES)}>'"
        )
    if fam.group(1) not in FAMILIES:
        raise ExerciseFormatError(
            path, f"unknown family '{fam.group(1)}': one of {', '.join(FAMILIES)}"
        )
    limits = {"emulator-only": "", "cpu-only": ""}
    for key in limits:
        if third.startswith(f"# {key}:"):
            limits[key] = third.strip().removeprefix(f"# {key}:").strip()
    return Wrong(
        name=path.stem,
        path=path,
        expect=m.group(1),
        family=fam.group(1),
        emulator_only=limits["emulator-only"],
        cpu_only=limits["cpu-only"],
    )


def _right(path: Path) -> Right:
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
    except OSError as exc:
        raise ExerciseFormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    m = _WHY.match(first.strip())
    if not m:
        raise ExerciseFormatError(path, "the first line must be '# why: <what is unusual>'")
    return Right(name=path.stem, path=path, why=m.group(1))
