"""Rows read straight from a damaged SQLite file's pages, where SQLite's own reading stops.

A bad interior page (a table's root, say) hides every row below it from SQL, though the leaf
pages that hold the rows are intact. The sqlite3 shell's `.recover` finds them by reading every
page, but it needs the sqlite_dbpage table, which Python's sqlite3 (and Debian's shell) are
built without. This module does the part gpulab needs: it walks each table's b-tree from its
root page, collects the table leaf pages it reaches, and gives the leaves no walk reached and no
freelist holds (orphans) to the damaged tables whose column types they match exactly.

File format: https://www.sqlite.org/fileformat2.html (b-tree pages, cells, records, varints).
Reads only; every parse error just skips a page or a cell.
"""

from __future__ import annotations

import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEAF, INTERIOR = 0x0D, 0x05  # table b-tree page types


@dataclass
class Table:
    """A table as sqlite_master declares it: name, root page and column declarations."""

    name: str
    root: int
    columns: list[tuple[str, str, bool, bool]]  # name, declared type, not null, primary key
    leaves: set[int] = field(default_factory=set)
    cut: bool = False  # its walk met a bad page


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = 0
    for n in range(9):
        byte = buf[i + n]
        if n == 8:
            return (value << 8) | byte, i + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, i + n + 1
    raise ValueError("varint")


class Pages:
    """A SQLite file's bytes, read as pages: headers, cells, children and the freelist."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        if not self.data.startswith(b"SQLite format 3\0"):
            raise ValueError("not an SQLite file")
        size = struct.unpack(">H", self.data[16:18])[0]
        self.size = 65536 if size == 1 else size
        self.usable = self.size - self.data[20]
        self.count = len(self.data) // self.size

    def page(self, n: int) -> tuple[bytes, int]:
        """The page's bytes and where its b-tree header starts (100 on page 1)."""
        if not 1 <= n <= self.count:
            raise ValueError(f"page {n} is past the end")
        return self.data[(n - 1) * self.size : n * self.size], 100 if n == 1 else 0

    def kind(self, n: int) -> int:
        """Page `n`'s b-tree page type."""
        buf, h = self.page(n)
        return buf[h]

    def cells(self, n: int) -> list[int]:
        """The byte offsets of page `n`'s cells."""
        buf, h = self.page(n)
        header = 12 if buf[h] in (INTERIOR, 0x02) else 8
        count = struct.unpack(">H", buf[h + 3 : h + 5])[0]
        offsets = [
            struct.unpack(">H", buf[h + header + 2 * i : h + header + 2 * i + 2])[0]
            for i in range(count)
        ]
        if any(not h + header <= o < self.usable for o in offsets):
            raise ValueError(f"page {n}: a cell outside the page")
        return offsets

    def children(self, n: int) -> list[int]:
        """The child page numbers of interior page `n`, the right-most last."""
        buf, h = self.page(n)
        kids = [struct.unpack(">I", buf[o : o + 4])[0] for o in self.cells(n)]
        return [*kids, struct.unpack(">I", buf[h + 8 : h + 12])[0]]

    def freelist(self) -> set[int]:
        """Every page on the freelist (trunks and leaves); stops at a loop or a bad trunk."""
        free: set[int] = set()
        trunk = struct.unpack(">I", self.data[32:36])[0]
        while trunk and trunk not in free and len(free) <= self.count:
            free.add(trunk)
            try:
                buf, _ = self.page(trunk)
            except ValueError:
                break
            nxt, n = struct.unpack(">II", buf[:8])
            free.update(struct.unpack(f">{min(n, self.usable // 4 - 2)}I", buf[8 : 8 + 4 * n]))
            trunk = nxt
        return free

    def rows(self, n: int) -> list[tuple[int, list[Any]]]:
        """(rowid, values) of each cell of table leaf page `n` that decodes."""
        buf, _ = self.page(n)
        out = []
        for off in self.cells(n):
            try:
                size, i = _varint(buf, off)
                rowid, i = _varint(buf, i)
                out.append((rowid, _record(self._payload(buf, i, size))))
            except (ValueError, IndexError, struct.error, UnicodeDecodeError):
                continue
        return out

    def _payload(self, buf: bytes, i: int, size: int) -> bytes:
        u = self.usable
        most = u - 35
        if size <= most:
            return buf[i : i + size]
        least = (u - 12) * 32 // 255 - 23
        local = least + (size - least) % (u - 4)
        local = local if local <= most else least
        data = bytearray(buf[i : i + local])
        nxt = struct.unpack(">I", buf[i + local : i + local + 4])[0]
        seen: set[int] = set()
        while len(data) < size and nxt and nxt not in seen:  # the overflow chain
            seen.add(nxt)
            page, _ = self.page(nxt)
            nxt = struct.unpack(">I", page[:4])[0]
            data += page[4:u]
        if len(data) < size:
            raise ValueError("a broken overflow chain")
        return bytes(data[:size])


def _record(payload: bytes) -> list[Any]:
    head, i = _varint(payload, 0)
    types = []
    while i < head:
        t, i = _varint(payload, i)
        types.append(t)
    values: list[Any] = []
    pos = head
    widths = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}
    for t in types:
        if t == 0:
            values.append(None)
        elif t in widths:
            w = widths[t]
            values.append(int.from_bytes(payload[pos : pos + w], "big", signed=True))
            pos += w
        elif t == 7:
            values.append(struct.unpack(">d", payload[pos : pos + 8])[0])
            pos += 8
        elif t in (8, 9):
            values.append(t - 8)
        elif t >= 12:
            w = (t - 12) // 2
            chunk = payload[pos : pos + w]
            values.append(bytes(chunk) if t % 2 == 0 else chunk.decode("utf-8"))
            pos += w
        else:
            raise ValueError(f"serial type {t}")
        if pos > len(payload):
            raise ValueError("a record longer than its payload")
    return values


def _fits(table: Table, values: list[Any]) -> bool:
    """Every value has its column's declared type (an INTEGER PRIMARY KEY is stored as NULL)."""
    if len(values) != len(table.columns):
        return False
    for (_, decl, notnull, pk), v in zip(table.columns, values, strict=True):
        kind = _affinity(decl)
        if pk and kind == "int":
            ok = v is None
        elif v is None:
            ok = not notnull
        else:
            ok = kind is None or isinstance(v, int if kind == "int" else str)
        if not ok:
            return False
    return True


def _affinity(decl: str) -> str | None:
    decl = decl.upper()
    if "INT" in decl:
        return "int"
    if any(word in decl for word in ("TEXT", "CHAR", "CLOB")):
        return "text"
    return None


def _walk(pages: Pages, table: Table) -> None:
    todo, seen = [table.root], set()
    while todo:
        n = todo.pop()
        if n in seen:
            table.cut = True
            continue
        seen.add(n)
        try:
            kind = pages.kind(n)
            if kind == LEAF:
                pages.cells(n)
                table.leaves.add(n)
            elif kind == INTERIOR:
                todo.extend(pages.children(n))
            else:
                table.cut = True
        except (ValueError, IndexError, struct.error):
            table.cut = True


def salvage(path: Path, db: sqlite3.Connection) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """Rows of each table a bad page cut, read from the pages: {table: [(rowid, {col: v})]}.

    `db` is a connection to a copy of the file (its schema, page 1, must still read).
    """
    tables = []
    for name, root in db.execute(
        "SELECT name, rootpage FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ):
        info = db.execute(f'PRAGMA table_info("{name}")').fetchall()
        cols = [(r[1], r[2] or "", bool(r[3]), bool(r[5])) for r in info]
        tables.append(Table(name, int(root), cols))
    pages = Pages(path)
    for table in tables:
        _walk(pages, table)
    reached = set().union(*(t.leaves for t in tables)) | pages.freelist() | {1}
    orphans = []
    for n in range(1, pages.count + 1):
        if n in reached:
            continue
        try:
            if pages.kind(n) == LEAF:
                orphans.extend(pages.rows(n))
        except (ValueError, IndexError, struct.error):
            continue
    out: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    cut = [t for t in tables if t.cut]
    for table in cut:
        rows = [r for n in sorted(table.leaves) for r in pages.rows(n)]
        rows += [
            r
            for r in orphans
            if _fits(table, r[1])
            and not any(_fits(other, r[1]) for other in cut if other is not table)
        ]
        out[table.name] = [(rowid, _named(table, rowid, values)) for rowid, values in rows]
    return out


def _named(table: Table, rowid: int, values: list[Any]) -> dict[str, Any]:
    """Column name -> value; a row written before a column was added lacks it (None)."""
    values = values + [None] * (len(table.columns) - len(values))
    return {
        name: rowid if pk and _affinity(decl) == "int" else v
        for (name, decl, _, pk), v in zip(table.columns, values)  # noqa: B905 - longer: cut
    }
