"""Records kept per device: one JSON file per device key under the data dir, a row per exercise.

The yardsticks' best figures (yardstick.py) and the ladders' rung figures (ladder.py) are kept
this way: a file names its schema and its device key, so a file of another schema or copied from
another machine reads as empty; a write is atomic (a temporary file, then a rename), so a reader
never sees half a file; a data dir that cannot be written keeps nothing and breaks nothing. JSON
only (no torch, no CuPy): the UI process may read them.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from gpulab.core.peaks import data_dir


class DeviceRecords:
    """The rows of one kind of record (`folder` under the data dir), by device key."""

    def __init__(self, folder: str, schema: int) -> None:
        self.folder = folder
        self.schema = schema

    def path(self, key: str) -> Path:
        """The file that holds device `key`'s rows."""
        slug = "".join(c if c.isalnum() or c in "._-" else "_" for c in key)[:180]
        return data_dir() / self.folder / f"{slug}.json"

    def read(self, key: str) -> dict[str, Any]:
        """Device `key`'s rows by exercise id ({} when there are none this code can read)."""
        try:
            data = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("schema") != self.schema:
            return {}
        rows = data.get("exercises") if data.get("key") == key else None
        return rows if isinstance(rows, dict) else {}

    def write(self, key: str, rows: dict[str, Any]) -> None:
        """Replace device `key`'s rows (atomically; nothing when the data dir is read-only)."""
        path = self.path(key)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{time.time_ns()}.tmp")
            body = {"schema": self.schema, "key": key, "exercises": rows}
            tmp.write_text(json.dumps(body, indent=1))
            tmp.replace(path)
