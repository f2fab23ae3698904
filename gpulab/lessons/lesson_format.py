"""What a lesson file's front matter must hold: the chapters, the keys, the quiz questions.

Separate from the catalog because it is the lesson format's rulebook (every message a writer
sees about a broken lesson header comes from here), while the catalog is about lessons once
they are loaded. Strict on purpose: a quiz answer out of range or a chapter of 99 is a wrong
lesson, not a cosmetic problem; every error names the file. Headless (no textual, no torch).
"""

from __future__ import annotations

import bisect
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpulab.core.front_matter import FormatError
from gpulab.experiments.quiz_probes import PROBES

CHAPTERS: dict[int, str] = {
    1: "Why GPUs",
    2: "Inside the GPU",
    3: "The CUDA programming model",
    4: "Checking your setup",
    5: "CuPy, NumPy for GPUs",
    6: "PyTorch on the GPU",
    7: "Timing GPU code honestly",
    8: "Parallel patterns",
    9: "Memory management",
    10: "Transfers",
    11: "Data types and tensor cores",
    12: "Performance regimes",
    13: "Mixed precision training",
    14: "Profiling",
    15: "Many GPUs",
    16: "Debugging",
    17: "Applications",
    18: "Streams",
    19: "CUDA graphs",
    20: "Warp-level primitives",
    21: "Triton",
    22: "torch.compile",
    23: "Profiling a step",
    24: "Numerics and determinism",
    25: "Collectives and topology",
}

# The first lesson of each chapter, by fixed id (other engineers and tests rely on these).
CHAPTER_LESSON_IDS: tuple[str, ...] = (
    "why-gpus",
    "inside-the-gpu",
    "cuda-programming-model",
    "checking-your-setup",
    "cupy-numpy-for-gpus",
    "pytorch-on-the-gpu",
    "timing-honestly",
    "parallel-patterns",
    "memory-management",
    "transfers",
    "dtypes-and-tensor-cores",
    "performance-regimes",
    "mixed-precision",
    "profiling",
    "many-gpus",
    "debugging",
    "applications",
    "streams",
    "cuda-graphs",
    "warp-primitives",
    "triton",
    "torch-compile",
    "profiling-a-step",
    "numerics",
    "collectives-and-topology",
)

_KEYS = ("id", "chapter", "order", "title", "objectives", "experiments", "quiz")
_QUESTION_KEYS = ("q", "choices", "answer", "explain")
_MEASURED_KEYS = ("q", "choices", "measure", "explain")  # a measured question has no fixed answer
_MEASURE_KEYS = ("probe", "bounds")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class LessonFormatError(FormatError):
    """A lesson file that does not follow the format; str() names the file and the problem."""


@dataclass(frozen=True)
class Measure:
    """What grades a measured question: the probe the worker runs on the learner's device
    (gpulab.experiments.quiz_probes) and the bounds that split its figure among the choices, in
    the choices' order: choice i is right when bounds[i - 1] <= figure < bounds[i]."""

    probe: str
    bounds: tuple[float, ...]

    def judge(self, figure: float) -> int:
        """The index of the choice `figure` makes right."""
        return bisect.bisect_right(self.bounds, figure)

    def to_dict(self) -> dict[str, Any]:
        """The measurement as JSON-ready data."""
        return {"probe": self.probe, "bounds": list(self.bounds)}


@dataclass(frozen=True)
class Question:
    """One quiz question: the question, choices, the right one and why. A measured question
    (`measure` set) has no fixed answer: its probe's figure on the learner's device picks it."""

    q: str
    choices: tuple[str, ...]
    answer: int | None
    explain: str
    measure: Measure | None = None

    def right(self, figure: float | None = None) -> int:
        """The index of the right choice: the fixed answer, or the one `figure` (the probe's
        measurement) picks for a measured question."""
        if self.measure is not None:
            if figure is None:
                raise ValueError("a measured question's answer needs its measurement")
            return self.measure.judge(figure)
        assert self.answer is not None  # validate_meta requires one when nothing is measured
        return self.answer

    def is_correct(self, choice: int, figure: float | None = None) -> bool:
        """True when `choice` is the right one (measured by `figure`, for a measured question)."""
        return choice == self.right(figure)

    def to_dict(self) -> dict[str, Any]:
        """The question as JSON-ready data."""
        return {
            "q": self.q,
            "choices": list(self.choices),
            "answer": self.answer,
            "explain": self.explain,
            "measure": self.measure.to_dict() if self.measure else None,
        }

    def shuffled(self, rng: random.Random) -> ShuffledQuestion:
        """This question with its choices in an order drawn from `rng` (one attempt's view). A
        measured question keeps its order: its choices are ranges of one figure, read in order,
        and which is right depends on the machine, not on a letter to remember."""
        order = list(range(len(self.choices)))
        if self.measure is None:
            rng.shuffle(order)
        return ShuffledQuestion(self, tuple(order))


@dataclass(frozen=True)
class ShuffledQuestion:
    """A question as one attempt of a quiz shows it: the same choices, in a drawn order.

    A lesson file lists the right choice wherever its writer put it, and a retake that showed
    the choices in that order again would reward remembering letters. `order[k]` is the index in
    `question.choices` of the choice shown k-th, so the answer is tracked through the shuffle
    and an answer can be kept by its index in the file (`original`), whatever order showed it.
    """

    question: Question
    order: tuple[int, ...]

    @property
    def q(self) -> str:
        """The question text."""
        return self.question.q

    @property
    def explain(self) -> str:
        """Why the right answer is right."""
        return self.question.explain

    @property
    def choices(self) -> tuple[str, ...]:
        """The choices in shown order."""
        return tuple(self.question.choices[i] for i in self.order)

    @property
    def measure(self) -> Measure | None:
        """What grades it, when it is a measured question."""
        return self.question.measure

    @property
    def answer(self) -> int:
        """The position at which the right choice is shown (a question with a fixed answer)."""
        return self.order.index(self.question.right())

    def right_position(self, figure: float | None = None) -> int:
        """Where the right choice is shown (measured by `figure`, for a measured question)."""
        return self.order.index(self.question.right(figure))

    def original(self, shown: int) -> int:
        """The index in the lesson file of the choice shown at position `shown`."""
        return self.order[shown]

    def position(self, original: int) -> int:
        """Where the choice with index `original` in the lesson file is shown."""
        return self.order.index(original)

    def is_correct(self, shown: int, figure: float | None = None) -> bool:
        """True when the choice shown at `shown` is the right one (by `figure`, if measured)."""
        return self.question.is_correct(self.order[shown], figure)


def shuffle_quiz(questions: Iterable[Question], rng: random.Random) -> tuple[ShuffledQuestion, ...]:
    """One attempt's view of a quiz: every question's choices in a fresh order from `rng`
    (a `random.Random(seed)` gives the same orders every time, for tests)."""
    return tuple(q.shuffled(rng) for q in questions)


def validate_meta(meta: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The checked front matter of a lesson; LessonFormatError names the first problem."""

    def fail(problem: str) -> LessonFormatError:
        return LessonFormatError(source, problem)

    unknown = [k for k in meta if k not in _KEYS]
    if unknown:
        raise fail(f"unknown key(s) {', '.join(map(str, unknown))}; allowed: {', '.join(_KEYS)}")
    missing = [k for k in _KEYS if k not in meta]
    if missing:
        raise fail(f"missing key(s): {', '.join(missing)}")

    lesson_id = meta["id"]
    if not isinstance(lesson_id, str) or not _ID.match(lesson_id):
        raise fail(f"id {lesson_id!r} must be lower-case words joined by '-'")
    chapter = meta["chapter"]
    if not _is_int(chapter) or chapter not in CHAPTERS:
        known = ", ".join(str(c) for c in sorted(CHAPTERS))
        raise fail(f"chapter {chapter!r} must be one of the chapters: {known}")
    order = meta["order"]
    if not _is_int(order) or order < 0:
        raise fail(f"order {order!r} must be a whole number >= 0")
    title = meta["title"]
    if not _nonempty_str(title):
        raise fail("title must be non-empty text")
    objectives = _str_list(meta["objectives"], "objectives", fail)
    if not objectives:
        raise fail("objectives must list at least one objective")
    experiments = _str_list(meta["experiments"], "experiments", fail)
    for exp_id in experiments:
        if not _ID.match(exp_id):
            raise fail(f"experiments: {exp_id!r} is not an experiment id")
    quiz = meta["quiz"]
    if not isinstance(quiz, list):
        raise fail("quiz must be a list of questions")
    questions = tuple(_question(item, i, fail) for i, item in enumerate(quiz, 1))
    return {
        "id": lesson_id,
        "chapter": chapter,
        "order": order,
        "title": title.strip(),
        "objectives": objectives,
        "experiments": experiments,
        "quiz": questions,
    }


def _question(item: Any, n: int, fail: Callable[[str], Exception]) -> Question:
    where = f"quiz question {n}"
    if not isinstance(item, Mapping):
        raise fail(f"{where} must be a mapping with keys {', '.join(_QUESTION_KEYS)}")
    keys = _MEASURED_KEYS if "measure" in item else _QUESTION_KEYS
    unknown = [k for k in item if k not in keys]
    if unknown:
        why = " (a measured question's answer is its measurement)" if "answer" in unknown else ""
        raise fail(f"{where}: unknown key(s) {', '.join(map(str, unknown))}{why}")
    missing = [k for k in keys if k not in item]
    if missing:
        raise fail(f"{where}: missing key(s) {', '.join(missing)}")
    if not _nonempty_str(item["q"]):
        raise fail(f"{where}: q must be non-empty text")
    choices = item["choices"]
    if not isinstance(choices, list) or len(choices) < 2:
        raise fail(f"{where}: choices must be a list of at least 2")
    # YAML turns `- 32` or `- yes` into numbers and booleans; a choice is shown as text anyway.
    if any(isinstance(c, Mapping | list) or c is None for c in choices):
        raise fail(f"{where}: every choice must be plain text")
    texts = tuple(str(c).strip() for c in choices)
    if any(not t for t in texts):
        raise fail(f"{where}: a choice is empty")
    if len({t.lower() for t in texts}) != len(texts):
        raise fail(f"{where}: two choices are the same")
    if not _nonempty_str(item["explain"]):
        raise fail(f"{where}: explain must be non-empty text")
    if "measure" in item:
        measure = _measure(item["measure"], len(texts), where, fail)
        return Question(item["q"].strip(), texts, None, item["explain"].strip(), measure)
    answer = item["answer"]
    if not _is_int(answer) or not 0 <= answer < len(texts):
        raise fail(
            f"{where}: answer {answer!r} must be the 0-based index of one choice "
            f"(0 to {len(texts) - 1})"
        )
    return Question(item["q"].strip(), texts, answer, item["explain"].strip())


def _measure(item: Any, choices: int, where: str, fail: Callable[[str], Exception]) -> Measure:
    if not isinstance(item, Mapping) or set(item) != set(_MEASURE_KEYS):
        raise fail(f"{where}: measure must be a mapping with keys {', '.join(_MEASURE_KEYS)}")
    probe = item["probe"]
    if probe not in PROBES:
        raise fail(f"{where}: measure's probe {probe!r} is none of {', '.join(PROBES)}")
    bounds = item["bounds"]
    numbers = isinstance(bounds, list) and all(
        isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b) for b in bounds
    )
    if not numbers or len(bounds) != choices - 1 or sorted(set(bounds)) != bounds:
        raise fail(
            f"{where}: measure's bounds must be {choices - 1} increasing numbers, one between "
            "each two neighbouring choices"
        )
    return Measure(str(probe), tuple(float(b) for b in bounds))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _str_list(value: Any, key: str, fail: Callable[[str], Exception]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(_nonempty_str(v) for v in value):
        raise fail(f"{key} must be a list of non-empty text")
    return tuple(v.strip() for v in value)
