"""Progress and run history in SQLite, under the user data dir (or $GPULAB_DATA_DIR).

Durability: WAL journal and synchronous=FULL. In WAL mode a crash of the *process* never loses a
committed transaction whatever `synchronous` says; FULL also fsyncs the WAL at every commit, so
a power cut or a kernel panic loses nothing either (NORMAL may drop the last few commits there).
gpulab writes a handful of rows per minute at most (a quiz answer, a lesson read, a run), so the
cost of one fsync per commit is invisible. Every write is its own transaction: what one call
saved is on disk when it returns, and a crash in the next one cannot take it back.

WAL also lets a second reader (`gpulab lessons` while the TUI runs, or two TUIs) read committed
data while a writer is busy; writers wait up to `BUSY_TIMEOUT_S` for each other.

Faults of the file or the disk (a bad page, a full disk, a read-only data dir) never stop the
lab: they become notices (store/connection.py, the guarded connection Store stands on).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpulab.core.datadir import resolve
from gpulab.store.connection import RECOVER_HINT, GuardedConnection, StoreError, is_damage

DB_NAME = "gpulab.sqlite3"
BUSY_TIMEOUT_S = 5.0
# Each entry upgrades the schema from version i to i + 1; never edit one that has shipped.
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE lessons_read (
        lesson_id     TEXT PRIMARY KEY,
        first_read_at TEXT NOT NULL,
        last_read_at  TEXT NOT NULL
    );
    CREATE TABLE quiz_answers (
        id             INTEGER PRIMARY KEY,
        lesson_id      TEXT NOT NULL,
        question_index INTEGER NOT NULL,
        choice         INTEGER NOT NULL,
        correct        INTEGER NOT NULL,
        answered_at    TEXT NOT NULL
    );
    CREATE INDEX quiz_answers_lesson ON quiz_answers (lesson_id, question_index);
    CREATE TABLE quiz_best (
        lesson_id  TEXT PRIMARY KEY,
        best_score INTEGER NOT NULL,
        total      INTEGER NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE runs (
        id           INTEGER PRIMARY KEY,
        experiment   TEXT NOT NULL,
        params_json  TEXT NOT NULL,
        started_at   TEXT NOT NULL,
        final_type   TEXT,
        summary_json TEXT
    );
    CREATE INDEX runs_experiment ON runs (experiment, started_at);
    """,
    # 2: exercises (gpulab/exercises/progress.py reads and writes these).
    """
    CREATE TABLE exercise_state (
        exercise_id    TEXT PRIMARY KEY,
        state          TEXT NOT NULL,
        passed_ever    INTEGER NOT NULL DEFAULT 0,
        best_grade     TEXT,
        best_fraction  REAL,
        hints_revealed INTEGER NOT NULL DEFAULT 0,
        updated_at     TEXT NOT NULL
    );
    CREATE TABLE exercise_attempts (
        id           INTEGER PRIMARY KEY,
        exercise_id  TEXT NOT NULL,
        attempted_at TEXT NOT NULL,
        verdict      TEXT NOT NULL,
        grade        TEXT,
        fraction     REAL,
        seed         INTEGER NOT NULL,
        kind         TEXT NOT NULL DEFAULT '',
        message      TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX exercise_attempts_exercise ON exercise_attempts (exercise_id, id);
    """,
    # 3: run history that is kept (gpulab.history.entries): what `list_runs` shows, plus the whole entry
    # (rows, verdicts, versions, the calibration it was judged against, telemetry) as JSON.
    """
    ALTER TABLE runs ADD COLUMN source TEXT;
    ALTER TABLE runs ADD COLUMN host TEXT;
    ALTER TABLE runs ADD COLUMN device TEXT;
    ALTER TABLE runs ADD COLUMN finished_at TEXT;
    ALTER TABLE runs ADD COLUMN verdict TEXT;
    ALTER TABLE runs ADD COLUMN headline TEXT;
    ALTER TABLE runs ADD COLUMN entry_json TEXT;
    CREATE INDEX runs_started ON runs (started_at);
    """,
    # 4: the learner's predictions, each beside its measurement (gpulab.history.predictions):
    # predicted and measured are JSON values (a number of ms or percent, or a name).
    """
    CREATE TABLE predictions (
        id           INTEGER PRIMARY KEY,
        kind         TEXT NOT NULL,
        subject      TEXT NOT NULL,
        quantity     TEXT NOT NULL,
        predicted    TEXT NOT NULL,
        measured     TEXT,
        device       TEXT NOT NULL DEFAULT '',
        note         TEXT NOT NULL DEFAULT '',
        predicted_at TEXT NOT NULL,
        measured_at  TEXT
    );
    CREATE INDEX predictions_subject ON predictions (kind, subject, id);
    """,
    # 5: checks run on the CUDA emulator (correctness only) kept apart from graded ones.
    """
    ALTER TABLE exercise_state ADD COLUMN emulator_passed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE exercise_attempts ADD COLUMN emulated INTEGER NOT NULL DEFAULT 0;
    """,
)
SCHEMA_VERSION = len(_MIGRATIONS)

__all__ = ["RECOVER_HINT", "Store", "StoreError", "is_damage"]  # and the row types below


def data_dir() -> Path:
    """$GPULAB_DATA_DIR (the CLI's --data-dir sets it), else platformdirs' user data dir."""
    return resolve()


def default_path() -> Path:
    """Where the store lives: gpulab.db in the data directory."""
    return data_dir() / DB_NAME


def now() -> str:
    """The current UTC time as ISO 8601 with milliseconds, as the store writes times."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _iso(value: str | float | datetime | None) -> str:
    if value is None:
        return now()
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, timezone.utc).isoformat(timespec="milliseconds")
    return str(value)


@dataclass(frozen=True)
class ReadMark:
    """When a lesson was first and last read."""

    lesson_id: str
    first_read_at: str
    last_read_at: str


@dataclass(frozen=True)
class QuizBest:
    """A lesson's best quiz score out of its total."""

    lesson_id: str
    best_score: int
    total: int


@dataclass(frozen=True)
class Answer:
    """One recorded quiz answer."""

    lesson_id: str
    question_index: int
    choice: int
    correct: bool
    answered_at: str


@dataclass(frozen=True)
class RunRow:
    """One kept run as its table row holds it."""

    id: int
    experiment: str
    params: dict[str, Any]
    started_at: str
    final_type: str | None
    summary: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict."""
        return {
            "id": self.id,
            "experiment": self.experiment,
            "params": self.params,
            "started_at": self.started_at,
            "final_type": self.final_type,
            "summary": self.summary,
        }


class Store(GuardedConnection):
    """The progress database: lessons read, quiz answers and best scores, run history.

    Reads and writes never raise for a fault of the file or the disk (see gpulab.store.connection)."""

    schema_version = SCHEMA_VERSION
    busy_timeout_s = BUSY_TIMEOUT_S

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        read_only: bool = False,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(
            default_path() if path is None else path, read_only=read_only, on_notice=on_notice
        )

    # -- plumbing --------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._write() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer gpulab (schema {version}, "
                    f"this one knows {SCHEMA_VERSION}); upgrade gpulab or use --data-dir"
                )
            for step in range(version, SCHEMA_VERSION):
                for statement in _MIGRATIONS[step].split(";"):
                    if statement.strip():
                        db.execute(statement)
            if version != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # -- lessons ---------------------------------------------------------------------------

    def mark_read(self, lesson_id: str, at: str | float | None = None) -> None:
        """Record that `lesson_id` was read (at `at`, default now); the first read time stays."""
        when = _iso(at)
        with self._write() as db:
            db.execute(
                "INSERT INTO lessons_read (lesson_id, first_read_at, last_read_at) "
                "VALUES (?, ?, ?) ON CONFLICT (lesson_id) DO UPDATE SET last_read_at = ?",
                (lesson_id, when, when, when),
            )

    def read_marks(self) -> dict[str, ReadMark]:
        """Every read lesson's marks, by lesson id."""
        rows = self._query("SELECT lesson_id, first_read_at, last_read_at FROM lessons_read")
        return {r[0]: ReadMark(*r) for r in rows}

    def is_read(self, lesson_id: str) -> bool:
        """Whether `lesson_id` has been read."""
        return bool(self._query("SELECT 1 FROM lessons_read WHERE lesson_id = ?", (lesson_id,)))

    # -- quizzes ---------------------------------------------------------------------------

    def record_answer(
        self, lesson_id: str, question_index: int, choice: int, correct: bool
    ) -> None:
        """Record one quiz answer and whether it was right."""
        with self._write() as db:
            db.execute(
                "INSERT INTO quiz_answers (lesson_id, question_index, choice, correct, answered_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (lesson_id, question_index, choice, int(bool(correct)), now()),
            )

    def answers(self, lesson_id: str) -> list[Answer]:
        """Every answer recorded for `lesson_id`, oldest first."""
        rows = self._query(
            "SELECT lesson_id, question_index, choice, correct, answered_at FROM quiz_answers "
            "WHERE lesson_id = ? ORDER BY id",
            (lesson_id,),
        )
        return [Answer(r[0], r[1], r[2], bool(r[3]), r[4]) for r in rows]

    def record_quiz(self, lesson_id: str, score: int, total: int) -> QuizBest:
        """Keep the best score (by fraction, so a quiz that grew a question compares fairly)."""
        if total <= 0 or not 0 <= score <= total:
            raise ValueError(f"quiz score {score}/{total} is not possible")
        with self._write() as db:
            row = db.execute(
                "SELECT best_score, total FROM quiz_best WHERE lesson_id = ?", (lesson_id,)
            ).fetchone()
            if (
                row is None
                or score * row[1] > row[0] * total
                or (score * row[1] == row[0] * total and total != row[1])
            ):
                db.execute(
                    "INSERT INTO quiz_best (lesson_id, best_score, total, updated_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (lesson_id) DO UPDATE SET "
                    "best_score = excluded.best_score, total = excluded.total, "
                    "updated_at = excluded.updated_at",
                    (lesson_id, score, total, now()),
                )
                return QuizBest(lesson_id, score, total)
            return QuizBest(lesson_id, row[0], row[1])
        return QuizBest(lesson_id, score, total)  # not saved (a notice says why): this try

    def best_scores(self) -> dict[str, QuizBest]:
        """Every lesson's best quiz score, by lesson id."""
        rows = self._query("SELECT lesson_id, best_score, total FROM quiz_best")
        return {r[0]: QuizBest(*r) for r in rows}

    # -- run history -----------------------------------------------------------------------

    def add_run(
        self,
        experiment: str,
        params: Mapping[str, Any],
        *,
        started_at: str | float | datetime | None = None,
        final_type: str | None = None,
        summary: Mapping[str, Any] | None = None,
    ) -> int:
        """Record a run (final_type: result / failed / cancelled, or None while it runs)."""
        with self._write() as db:
            cur = db.execute(
                "INSERT INTO runs (experiment, params_json, started_at, final_type, summary_json)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    experiment,
                    json.dumps(dict(params), default=str),
                    _iso(started_at),
                    final_type,
                    None if summary is None else json.dumps(dict(summary), default=str),
                ),
            )
            return int(cur.lastrowid or 0)
        return 0  # not saved (a notice says why)

    def finish_run(
        self, run_id: int, final_type: str, summary: Mapping[str, Any] | None = None
    ) -> None:
        """Record run `run_id`'s final event type and summary."""
        with self._write() as db:
            db.execute(
                "UPDATE runs SET final_type = ?, summary_json = ? WHERE id = ?",
                (
                    final_type,
                    None if summary is None else json.dumps(dict(summary), default=str),
                    run_id,
                ),
            )

    def record_run(self, entry: Mapping[str, Any]) -> int:
        """Keep one finished run: a `gpulab.history.entries` entry (the whole of it, as JSON)."""
        summary = entry.get("summary")
        with self._write() as db:
            cur = db.execute(
                "INSERT INTO runs (experiment, params_json, started_at, final_type, summary_json,"
                " source, host, device, finished_at, verdict, headline, entry_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(entry["experiment"]),
                    json.dumps(dict(entry.get("params") or {}), default=str),
                    _iso(entry.get("started_at")),
                    entry.get("status"),
                    None if summary is None else json.dumps(summary, default=str),
                    entry.get("source"),
                    entry.get("host"),
                    entry.get("device"),
                    entry.get("finished_at"),
                    entry.get("verdict"),
                    entry.get("headline"),
                    json.dumps(dict(entry), default=str),
                ),
            )
            return int(cur.lastrowid or 0)
        return 0  # not saved (a notice says why)

    def run_entries(
        self, ids: list[int] | None = None, *, experiment: str | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Kept runs as `gpulab.history.entries` entries (with "id"), oldest first; runs from before
        the history was kept (no entry) are rebuilt from their columns."""
        sql = (
            "SELECT id, experiment, params_json, started_at, final_type, summary_json, source,"
            " host, device, finished_at, verdict, headline, entry_json FROM runs"
        )
        where: list[str] = []
        args: list[int | str] = []
        if ids is not None:
            where.append(f"id IN ({','.join('?' * len(ids))})")
            args.extend(int(i) for i in ids)
        if experiment is not None:
            where.append("experiment = ?")
            args.append(experiment)
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._query(sql + " ORDER BY id DESC LIMIT ?", (*args, int(limit)))
        out = []
        for r in reversed(rows):
            entry = json.loads(r[12]) if r[12] else {}
            if not entry:
                cols = ("experiment", "params", "started_at", "status", "summary", "source")
                raw = (r[1], json.loads(r[2]), r[3], r[4], json.loads(r[5]) if r[5] else None)
                entry = dict(zip(cols, (*raw, r[6]), strict=True))
                entry.update(host=r[7], device=r[8], finished_at=r[9], verdict=r[10])
                entry["headline"] = r[11]
            entry["id"] = r[0]
            out.append(entry)
        return out

    def list_runs(self, experiment: str | None = None, limit: int = 100) -> list[RunRow]:
        """Newest first."""
        sql = "SELECT id, experiment, params_json, started_at, final_type, summary_json FROM runs"
        args: tuple[Any, ...] = ()
        if experiment is not None:
            sql += " WHERE experiment = ?"
            args = (experiment,)
        sql += " ORDER BY id DESC LIMIT ?"
        rows = self._query(sql, (*args, int(limit)))
        out = []
        for r in rows:
            try:
                params, summary = json.loads(r[2]), json.loads(r[5]) if r[5] else None
            except (ValueError, TypeError) as exc:  # a damaged row: the others still show
                self._notice(f"run {r[0]} in {self.path} could not be read ({exc}); skipped")
                continue
            out.append(RunRow(r[0], r[1], params, r[3], r[4], summary))
        return out


def open_store(path: str | Path | None = None) -> Store:
    """Open (creating if needed) the store at `path`, default `default_path()`."""
    return Store(path)
