"""Exercise progress in the SQLite store: state, best grade, attempts and revealed hints.

Tables `exercise_state` and `exercise_attempts` (migration 2 in gpulab/store/database.py). Kept
out of the store's module so it stays about the tables and the connection; this module only goes
through its `_write` (one transaction) and `_query` (rows) like the store's own methods.

State per exercise: "not started" (no attempt), "failing" (the last check failed), "passing"
(the last check passed). `passed_ever` stays set once an exercise passed, so the solution can be
shown and the list can say it was solved even while the learner experiments further.

A check on the CUDA emulator (no GPU or no CuPy here) is correctness only: its pass sets
`passed_ever` and `emulator_passed`, never the best grade, which only a check on a GPU (or the
CPU an exercise is graded on) gives. The attempt keeps where it ran (`emulated`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulab.store.database import Store, now

NOT_STARTED, FAILING, PASSING = "not started", "failing", "passing"
GRADE_ORDER = ("pass", "bronze", "silver", "gold")


def _rank(grade: str | None) -> int:
    return GRADE_ORDER.index(grade) if grade in GRADE_ORDER else -1


@dataclass(frozen=True)
class ExerciseProgress:
    """A learner's standing on one exercise: state, best grade and hints revealed."""

    exercise_id: str
    state: str = NOT_STARTED
    passed_ever: bool = False
    best_grade: str | None = None
    best_fraction: float | None = None
    hints_revealed: int = 0
    attempts: int = 0
    emulator_passed: bool = False  # passed on the CUDA emulator (correctness only)

    def to_dict(self) -> dict[str, Any]:
        """The standing as JSON-ready data."""
        return dict(self.__dict__)

    @property
    def only_emulated(self) -> bool:
        """Passed on the emulator and never graded: what the lists show as "passed on the
        emulator"."""
        return self.emulator_passed and self.best_grade is None


@dataclass(frozen=True)
class Attempt:
    """One `gpulab ex check` of an exercise: when, the verdict and the grade."""

    exercise_id: str
    attempted_at: str
    verdict: str
    grade: str | None
    fraction: float | None
    seed: int
    kind: str
    message: str
    emulated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The attempt as JSON-ready data."""
        return dict(self.__dict__)


class Progress:
    """Exercise progress kept in the store: attempts recorded, standings read."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(
        self,
        exercise_id: str,
        verdict: str,
        *,
        seed: int,
        grade: str | None = None,
        fraction: float | None = None,
        kind: str = "",
        message: str = "",
        emulated: bool = False,
    ) -> ExerciseProgress:
        """One attempt; the state follows it, the best grade only ever rises (and only by a
        check that grades: an emulated one never does)."""
        passed = verdict == "pass"
        when = now()
        with self.store._write() as db:
            db.execute(
                "INSERT INTO exercise_attempts (exercise_id, attempted_at, verdict, grade, "
                "fraction, seed, kind, message, emulated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    exercise_id,
                    when,
                    verdict,
                    None if emulated else grade,
                    None if emulated else fraction,
                    int(seed),
                    kind,
                    message[:2000],
                    int(emulated),
                ),
            )
            row = db.execute(
                "SELECT best_grade, best_fraction FROM exercise_state WHERE exercise_id = ?",
                (exercise_id,),
            ).fetchone()
            best, best_fraction = (row[0], row[1]) if row else (None, None)
            if (
                passed
                and not emulated
                and (
                    _rank(grade) > _rank(best)
                    or (_rank(grade) == _rank(best) and (fraction or 0) > (best_fraction or 0))
                )
            ):
                best, best_fraction = grade, fraction
            db.execute(
                "INSERT INTO exercise_state (exercise_id, state, passed_ever, best_grade, "
                "best_fraction, emulator_passed, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (exercise_id) DO UPDATE SET state = excluded.state, "
                "passed_ever = MAX(passed_ever, excluded.passed_ever), "
                "best_grade = excluded.best_grade, best_fraction = excluded.best_fraction, "
                "emulator_passed = MAX(emulator_passed, excluded.emulator_passed), "
                "updated_at = excluded.updated_at",
                (
                    exercise_id,
                    PASSING if passed else FAILING,
                    int(passed),
                    best,
                    best_fraction,
                    int(passed and emulated),
                    when,
                ),
            )
        return self.get(exercise_id)

    def reveal_hint(self, exercise_id: str, available: int) -> int:
        """Reveal one more hint (at most `available`); returns how many are revealed now."""
        with self.store._write() as db:
            db.execute(
                "INSERT INTO exercise_state (exercise_id, state, hints_revealed, updated_at) "
                "VALUES (?, ?, MIN(1, ?), ?) ON CONFLICT (exercise_id) DO UPDATE SET "
                "hints_revealed = MIN(hints_revealed + 1, ?), updated_at = excluded.updated_at",
                (exercise_id, NOT_STARTED, available, now(), available),
            )
        return self.get(exercise_id).hints_revealed

    def get(self, exercise_id: str) -> ExerciseProgress:
        """The standing on `exercise_id` (not started when there is none)."""
        return self.all([exercise_id]).get(exercise_id) or ExerciseProgress(exercise_id)

    def all(self, only: list[str] | None = None) -> dict[str, ExerciseProgress]:
        """The standings by exercise id, all of them or only those in `only`."""
        rows = self.store._query(
            "SELECT s.exercise_id, s.state, s.passed_ever, s.best_grade, s.best_fraction, "
            "s.hints_revealed, (SELECT COUNT(*) FROM exercise_attempts a "
            "WHERE a.exercise_id = s.exercise_id), s.emulator_passed FROM exercise_state s"
        )
        out = {
            r[0]: ExerciseProgress(
                r[0], r[1], bool(r[2]), r[3], r[4], int(r[5]), int(r[6]), bool(r[7])
            )
            for r in rows
        }
        return {k: v for k, v in out.items() if only is None or k in only}

    def attempts(self, exercise_id: str, limit: int = 50) -> list[Attempt]:
        """Newest first."""
        rows = self.store._query(
            "SELECT exercise_id, attempted_at, verdict, grade, fraction, seed, kind, message, "
            "emulated FROM exercise_attempts WHERE exercise_id = ? ORDER BY id DESC LIMIT ?",
            (exercise_id, int(limit)),
        )
        return [
            Attempt(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], emulated=bool(r[8]))
            for r in rows
        ]
