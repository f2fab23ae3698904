"""Progress and run history in SQLite, under the user data dir (or $GPULAB_DATA_DIR).

Durability: WAL journal and synchronous=FULL. In WAL mode a crash of the *process* never loses a
committed transaction whatever `synchronous` says; FULL also fsyncs the WAL at every commit, so
a power cut or a kernel panic loses nothing either (NORMAL may drop the last few commits there).
gpulab writes a handful of rows per minute at most (a quiz answer, a lesson read, a run), so the
cost of one fsync per commit is invisible. Every write is its own transaction: what one call
saved is on disk when it returns, and a crash in the next one cannot take it back.

WAL also lets a second reader (`gpulab lessons` while the TUI runs, or two TUIs) read committed
data while a writer is busy; writers wait up to `BUSY_TIMEOUT_S` for each other.

Faults never stop the lab: a read that fails (a bad page, a disk error) returns nothing, a write
that fails (a full disk, a lock held too long) is dropped, and each says so once in
`Store.notices` (and to `on_notice`), naming the file, which is never changed or deleted. A
damaged file takes no more writes (`gpulab store recover` salvages it: gpulab/store_recover.py).
A file gpulab may not write (a read-only data dir) is opened read-only: progress shows, nothing
new is saved.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DB_NAME = "gpulab.sqlite3"
BUSY_TIMEOUT_S = 5.0
SCHEMA_VERSION = 1

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
)


class StoreError(RuntimeError):
    """The progress database cannot be used; str() is one line to show a person."""


RECOVER_HINT = "gpulab store recover salvages what it can"
# A write refused up front runs its block against this closed connection: the block's first
# statement raises ProgrammingError, which `_write` swallows (a contextmanager cannot skip it).
_NOWHERE = sqlite3.connect(":memory:", check_same_thread=False)
_NOWHERE.close()


def _is_fault(exc: BaseException) -> bool:
    """A failure of the file or the disk (locked, full, read-only, damaged), not of gpulab's SQL:
    constraint violations and misuse (IntegrityError, ProgrammingError, ...) still raise."""
    return isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError


def is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("malformed", "not a database", "corrupt", "disk i/o error"))


def data_dir() -> Path:
    """$GPULAB_DATA_DIR (the CLI's --data-dir sets it), else platformdirs' user data dir."""
    from gpulab.datadir import resolve

    return resolve()


def default_path() -> Path:
    return data_dir() / DB_NAME


def now() -> str:
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
    lesson_id: str
    first_read_at: str
    last_read_at: str


@dataclass(frozen=True)
class QuizBest:
    lesson_id: str
    best_score: int
    total: int


@dataclass(frozen=True)
class Answer:
    lesson_id: str
    question_index: int
    choice: int
    correct: bool
    answered_at: str


@dataclass(frozen=True)
class RunRow:
    id: int
    experiment: str
    params: dict[str, Any]
    started_at: str
    final_type: str | None
    summary: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "experiment": self.experiment,
            "params": self.params,
            "started_at": self.started_at,
            "final_type": self.final_type,
            "summary": self.summary,
        }


class Store:
    """One connection to the progress database. Safe to share between threads (one lock)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        read_only: bool = False,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None and str(path) != ":memory:" else path
        if self.path is None:
            self.path = default_path()
        self._lock = threading.RLock()
        self.notices: list[str] = []  # one line each, in order, never repeated
        self.on_notice = on_notice
        self.read_only = False  # nothing new is saved (the file could not be opened to write)
        self.damaged = False  # a read or write met a damaged file: no more writes to it
        self._snapshot: str | None = None  # a private copy read in place of the file
        self._opening = False
        target = str(self.path)
        why = ""
        damage: sqlite3.Error | None = None
        if not read_only:
            try:
                self._open_rw(target)
                return
            except StoreError:
                raise
            except (sqlite3.Error, OSError) as exc:
                if target == ":memory:" or not Path(target).is_file():
                    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    raise StoreError(
                        f"cannot open the progress database {target}: {detail}"
                    ) from None
                if isinstance(exc, sqlite3.Error) and is_damage(exc):
                    damage = exc  # read what can be read (below), write nothing
                else:  # a read-only data dir or file: still show what is there (below)
                    why = str(exc)
        try:
            self._db = self._open_ro(Path(target))
            self._check_version(self._db.execute("PRAGMA user_version").fetchone()[0])
        except StoreError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"progress could not be read: {damage or exc}; your file is kept at {target}"
                f" ({RECOVER_HINT})"
            ) from None
        if damage is not None:
            self._fault(damage, "read")
            return
        self.read_only = True
        if why:
            self._notice(
                f"progress is read-only ({why}): it is shown, but nothing new will be saved"
                f" to {target}"
            )

    def _open_rw(self, target: str) -> None:
        if target != ":memory:":
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we open every transaction ourselves (BEGIN IMMEDIATE).
        self._db = sqlite3.connect(
            target, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._opening = True  # _write raises while opening: the caller decides what opens
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            # Only a migration needs the write lock: another instance writing must not turn
            # an up-to-date file read-only.
            if self._db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                self._migrate()
        except BaseException:
            self._db.close()
            raise
        finally:
            self._opening = False

    def _open_ro(self, path: Path) -> sqlite3.Connection:
        """Read without writing anything next to the file: mode=ro reads a WAL database whose
        -shm exists; without a WAL file, immutable=1 needs no lock files at all; a WAL file
        that cannot be used in place is read from a private copy (so its commits still show)."""
        uri = path.resolve().as_uri()
        wal = path.with_name(path.name + "-wal")
        has_wal = wal.is_file() and wal.stat().st_size > 0
        tries = [f"{uri}?mode=ro"] + ([] if has_wal else [f"{uri}?mode=ro&immutable=1"])
        error: Exception | None = None
        for attempt in tries:
            db = None
            try:
                db = sqlite3.connect(
                    attempt,
                    uri=True,
                    timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,
                )
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.OperationalError as exc:
                if db is not None:
                    db.close()
                error = exc
        if not has_wal:
            raise error or sqlite3.OperationalError("cannot read the file")
        self._snapshot = tempfile.mkdtemp(prefix="gpulab-store-")
        copy = Path(self._snapshot) / path.name
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        return sqlite3.connect(
            str(copy), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
        )

    # -- plumbing --------------------------------------------------------------------------

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer gpulab (schema {version}, "
                f"this one knows {SCHEMA_VERSION}); upgrade gpulab or use --data-dir"
            )

    def _migrate(self) -> None:
        with self._write() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            self._check_version(version)
            for step in range(version, SCHEMA_VERSION):
                for statement in _MIGRATIONS[step].split(";"):
                    if statement.strip():
                        db.execute(statement)
            if version != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _notice(self, text: str) -> None:
        if text in self.notices:
            return
        self.notices.append(text)
        if self.on_notice is not None:
            with contextlib.suppress(Exception):  # a broken display must not break the store
                self.on_notice(text)

    def _fault(self, exc: BaseException, verb: str) -> None:
        """Say once that a read or write failed; a damaged file takes no more writes."""
        damage = is_damage(exc)
        self.damaged = self.damaged or damage
        hint = f" ({RECOVER_HINT})" if damage else ""
        self._notice(f"progress could not be {verb}: {exc}; your file is kept at {self.path}{hint}")

    def _refusal(self) -> bool:
        if self.read_only:
            self._notice(f"progress is read-only: nothing new will be saved to {self.path}")
        elif self.damaged:
            self._notice(
                f"progress is not being saved: {self.path} is damaged and kept as it is"
                f" ({RECOVER_HINT})"
            )
        return self.read_only or self.damaged

    @property
    def problem(self) -> str | None:
        """The first thing that went wrong, one line, or None."""
        return self.notices[0] if self.notices else None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block ends, rolled back if it raises.

        A fault of the file or the disk (`_is_fault`) becomes a notice and the block's work is
        dropped, so code after the `with` runs: a method that returns a value needs a fallback
        there. Other errors (a constraint, a bug) roll back and raise as before.
        """
        with self._lock:
            refused = self._refusal()
            if not refused:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    if not _is_fault(exc) or self._opening:
                        raise
                    self._fault(exc, "saved")
                    refused = True
            if refused:
                with contextlib.suppress(sqlite3.ProgrammingError):
                    yield _NOWHERE
                return
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if not _is_fault(exc) or self._opening:
                    raise
                self._fault(exc, "saved")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows, or none when the file cannot be read (said once in `notices`)."""
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                if not _is_fault(exc):
                    raise
                self._fault(exc, "read")
                return []

    def pragma(self, name: str) -> Any:
        rows = self._query(f"PRAGMA {name}")
        return rows[0][0] if rows else None

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            if self._snapshot is not None:
                shutil.rmtree(self._snapshot, ignore_errors=True)
                self._snapshot = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lessons ---------------------------------------------------------------------------

    def mark_read(self, lesson_id: str, at: str | float | None = None) -> None:
        when = _iso(at)
        with self._write() as db:
            db.execute(
                "INSERT INTO lessons_read (lesson_id, first_read_at, last_read_at) "
                "VALUES (?, ?, ?) ON CONFLICT (lesson_id) DO UPDATE SET last_read_at = ?",
                (lesson_id, when, when, when),
            )

    def read_marks(self) -> dict[str, ReadMark]:
        rows = self._query("SELECT lesson_id, first_read_at, last_read_at FROM lessons_read")
        return {r[0]: ReadMark(*r) for r in rows}

    def is_read(self, lesson_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM lessons_read WHERE lesson_id = ?", (lesson_id,)))

    # -- quizzes ---------------------------------------------------------------------------

    def record_answer(
        self, lesson_id: str, question_index: int, choice: int, correct: bool
    ) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO quiz_answers (lesson_id, question_index, choice, correct, answered_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (lesson_id, question_index, choice, int(bool(correct)), now()),
            )

    def answers(self, lesson_id: str) -> list[Answer]:
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
        with self._write() as db:
            db.execute(
                "UPDATE runs SET final_type = ?, summary_json = ? WHERE id = ?",
                (
                    final_type,
                    None if summary is None else json.dumps(dict(summary), default=str),
                    run_id,
                ),
            )

    def list_runs(self, experiment: str | None = None, limit: int = 100) -> list[RunRow]:
        """Newest first."""
        sql = "SELECT id, experiment, params_json, started_at, final_type, summary_json FROM runs"
        args: tuple[Any, ...] = ()
        if experiment is not None:
            sql += " WHERE experiment = ?"
            args = (experiment,)
        sql += " ORDER BY id DESC LIMIT ?"
        rows = self._query(sql, (*args, int(limit)))
        return [
            RunRow(r[0], r[1], json.loads(r[2]), r[3], r[4], json.loads(r[5]) if r[5] else None)
            for r in rows
        ]


def open_store(path: str | Path | None = None) -> Store:
    return Store(path)
