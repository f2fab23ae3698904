"""`gpulab store [check|recover]`: look at the progress database, and salvage a damaged one.

`recover` never deletes the learner's file: it first copies it (and its -wal) aside as
`gpulab.sqlite3.damaged-<time>`, reads every row it can from that copy, and puts a fresh
database holding those rows in the file's place. Rows are read table by table, forwards in
rowid order until a bad page stops the scan, then backwards from the end until the same spot:
with one bad page, everything but the rows on that page comes back. (Python's iterdump stops
at the first bad page; the sqlite3 shell's `.recover` is not in every Python.)
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.store import pages
from gpulab.store.connection import StoreError
from gpulab.store.database import SCHEMA_VERSION, Store


@dataclass
class Recovery:
    """What a recovery saved, where the damaged file was kept, and which tables lost rows."""

    kept_at: Path  # the damaged file, as it was
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows saved
    unreadable: dict[str, str] = field(default_factory=dict)  # table -> why some rows are lost

    def lines(self) -> list[str]:
        """The recovery report as lines for the terminal."""
        saved = ", ".join(f"{t} {n}" for t, n in self.rows.items()) or "nothing"
        out = [f"rows saved: {saved}", f"the damaged file is kept at {self.kept_at}"]
        out += [f"{t}: some rows were lost ({why})" for t, why in self.unreadable.items()]
        return out


def check(path: Path) -> list[str]:
    """What is wrong with the file (SQLite's integrity_check), [] when it is sound."""
    if not path.exists():
        return []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return [str(exc)]
    try:
        rows = [r[0] for r in db.execute("PRAGMA integrity_check(20)").fetchall()]
        version = db.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as exc:
        return [str(exc)]
    finally:
        db.close()
    problems = [] if rows == ["ok"] else rows
    if version > SCHEMA_VERSION:
        problems.append(f"written by a newer gpulab (schema {version} > {SCHEMA_VERSION})")
    return problems


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in db.execute(f'PRAGMA table_info("{table}")').fetchall()]


def _salvage(db: sqlite3.Connection, table: str, columns: list[str]) -> tuple[list[Any], str]:
    """(rows, why some were lost or "") read around bad pages: forwards, then backwards."""
    cols = ", ".join(f'"{c}"' for c in columns)
    rows: dict[int, tuple[Any, ...]] = {}
    why = ""
    last = None
    for order in ("ASC", "DESC"):
        try:
            for row in db.execute(f'SELECT rowid, {cols} FROM "{table}" ORDER BY rowid {order}'):
                if order == "DESC" and last is not None and row[0] <= last:
                    break
                rows[row[0]] = row[1:]
                if order == "ASC":
                    last = row[0]
            else:
                if order == "ASC":
                    break  # read to the end: nothing was skipped
        except sqlite3.Error as exc:
            why = why or str(exc)
    return [rows[k] for k in sorted(rows)], why


def _in_use(path: Path) -> bool:
    """True when another gpulab holds the file (a write lock we cannot take at once)."""
    try:
        db = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    except sqlite3.Error:
        return False
    finally:
        db.close()


def recover(path: Path) -> Recovery:
    """Copy `path` aside, salvage its rows into a fresh database at `path`."""
    if not path.is_file():
        raise StoreError(f"there is no progress file at {path}")
    if _in_use(path):
        raise StoreError(f"{path} is in use by another gpulab: close it, then recover")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    side = ("-wal", "-shm")
    shutil.copy2(path, kept)
    for suffix in side:
        extra = path.with_name(path.name + suffix)
        if extra.is_file():
            shutil.copy2(extra, kept.with_name(kept.name + suffix))
    report = Recovery(kept_at=kept)
    fresh = path.with_name(f"{path.name}.recovering")
    fresh.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpulab-recover-") as scratch:
        # Rows are read from a scratch copy opened read-write, so its WAL is applied without
        # touching the kept copy (or the original) in any way.
        work = Path(scratch) / path.name
        shutil.copyfile(kept, work)
        _pad(work)
        wal = kept.with_name(kept.name + "-wal")
        if wal.is_file():
            shutil.copyfile(wal, work.with_name(work.name + "-wal"))
        with Store(fresh) as new:
            _copy_rows(work, new, report)
            failed = new.problem
    if failed:  # e.g. the disk is full: leave everything as it was (the copy aside stays)
        for leftover in fresh.parent.glob(fresh.name + "*"):
            leftover.unlink(missing_ok=True)
        raise StoreError(f"could not write the recovered file: {failed}")
    for suffix in side:  # the old WAL must not be applied to the new file
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    os.replace(fresh, path)
    return report


def _pad(path: Path) -> None:
    """Zero-fill a truncated copy up to the size its header records: SQLite refuses to load a
    schema whose tables start past the end of the file, but reads the pages that are there."""
    with path.open("r+b") as f:
        head = f.read(100)
        if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
            return
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page
        want = max(
            int.from_bytes(head[28:32], "big") * page, -(-path.stat().st_size // page) * page
        )
        if want > path.stat().st_size:
            f.truncate(want)  # extends with zeros


def _copy_rows(source: Path, new: Store, report: Recovery) -> None:
    tables = [
        r[0]
        for r in new._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    old = sqlite3.connect(str(source), isolation_level=None)
    from_pages: dict[str, list[tuple[int, dict[str, Any]]]] | None = None
    try:
        for table in tables:
            want = _columns(new._db, table)
            try:
                have = set(_columns(old, table))
            except sqlite3.Error as exc:
                report.unreadable[table] = str(exc)
                continue
            common = [c for c in want if c in have]
            if not common:
                continue
            rows, why = _salvage(old, table, common)
            if why:
                if from_pages is None:  # read the pages once, for every table cut
                    from_pages = _page_rows(source, old)
                rows += [tuple(v.get(c) for c in common) for _, v in from_pages.get(table, [])]
            marks = ", ".join("?" for _ in common)
            names = ", ".join(f'"{c}"' for c in common)
            with new._write() as db:
                db.executemany(f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({marks})', rows)
            report.rows[table] = new._query(f'SELECT count(*) FROM "{table}"')[0][0]
            if why:
                report.unreadable[table] = why
    finally:
        old.close()


def _page_rows(source: Path, old: sqlite3.Connection) -> dict[str, list[tuple[int, dict]]]:
    try:
        return pages.salvage(source, old)
    except (OSError, ValueError, sqlite3.Error):
        return {}
