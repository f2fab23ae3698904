"""The progress database's connection, guarded: what `gpulab.store.database.Store` stands on.

Faults never stop the lab: a read that fails (a bad page, a disk error) returns nothing, a write
that fails (a full disk, a lock held too long) is dropped, and each says so once in `notices`
(and to `on_notice`), naming the file, which is never changed or deleted. A damaged file takes
no more writes (`gpulab store recover` salvages it: gpulab/store/recover.py). A file gpulab may
not write (a read-only data dir) is opened read-only: progress shows, nothing new is saved.
Mistakes in gpulab's own SQL (a constraint, misuse) still raise.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from gpulab.core.errors import GpulabError

_C = TypeVar("_C", bound="GuardedConnection")


class StoreError(GpulabError, RuntimeError):
    """The progress database cannot be used; str() is one line to show a person."""


RECOVER_HINT = "gpulab store recover salvages what it can"
# A write refused up front runs its block against this closed connection: the block's first
# statement raises ProgrammingError, which `_write` swallows (a contextmanager cannot skip it).
_NOWHERE = sqlite3.connect(":memory:", check_same_thread=False)
_NOWHERE.close()


def _is_fault(exc: BaseException) -> bool:
    """A failure of the file or the disk (locked, full, read-only, damaged), not of gpulab's SQL:
    constraint violations, misuse and bad SQL (a syntax error, a column that is not there)
    still raise. A missing table is a fault: a read-only file from an older gpulab lacks some."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        return not any(w in text for w in ("syntax error", "no such column", "incomplete input"))
    return type(exc) is sqlite3.DatabaseError


def is_damage(exc: BaseException) -> bool:
    """Whether an SQLite error means the file is damaged (not busy or locked)."""
    text = str(exc).lower()
    return any(w in text for w in ("malformed", "not a database", "corrupt", "disk i/o error"))


class GuardedConnection:
    """One SQLite connection, safe to share between threads (one lock), whose faults become
    notices. A subclass sets `schema_version` and `_migrate` (run while opening, on a
    connection that can write)."""

    schema_version = 0
    busy_timeout_s = 5.0  # writers wait this long for each other

    def __init__(
        self,
        path: str | Path,
        *,
        read_only: bool = False,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.path: Path | str = path if str(path) == ":memory:" else Path(path)
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
        elif not Path(target).is_file():
            raise StoreError(f"there is no progress file at {target} to read")
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
            target, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        self._opening = True  # _write raises while opening: the caller decides what opens
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            # Only a migration needs the write lock: another instance writing must not turn
            # an up-to-date file read-only.
            if self._db.execute("PRAGMA user_version").fetchone()[0] != self.schema_version:
                self._migrate()
        except BaseException:  # close on any failure, then re-raise it
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
                    timeout=self.busy_timeout_s,
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
            str(copy), isolation_level=None, check_same_thread=False, timeout=self.busy_timeout_s
        )

    def _check_version(self, version: int) -> None:
        if version > self.schema_version:
            raise StoreError(
                f"{self.path} was written by a newer gpulab (schema {version}, "
                f"this one knows {self.schema_version}); upgrade gpulab or use --data-dir"
            )

    def _migrate(self) -> None:
        raise NotImplementedError

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
            except BaseException as exc:  # roll back on any failure; re-raised unless it is a fault
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
        """The value of PRAGMA `name` (None when it gives no row)."""
        rows = self._query(f"PRAGMA {name}")
        return rows[0][0] if rows else None

    def close(self) -> None:
        """Close the connection and drop its snapshot."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            if self._snapshot is not None:
                shutil.rmtree(self._snapshot, ignore_errors=True)
                self._snapshot = None

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
