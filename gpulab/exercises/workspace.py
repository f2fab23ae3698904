"""The learner's files: one plain `.py` per exercise in a folder the learner owns.

Default `<user data dir>/exercises`; `--workdir DIR` or $GPULAB_WORKDIR put it anywhere (a git
repository of the learner's, a folder their editor has open). A file is created from the
exercise's starter the first time it is needed and never overwritten after that, except by
`reset`, which first copies the learner's version to `.backups/` with a timestamp: nothing the
learner typed is ever lost. What gpulab last saw of each file (mtime and SHA-256) is kept in
`.gpulab-seen.json`, so a UI holding the file can tell an edit made outside it (vim over SSH)
from its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from gpulab.exercises.loader import Exercise
from gpulab.store.database import data_dir

WORKDIR_ENV = "GPULAB_WORKDIR"
BACKUPS = ".backups"
SEEN_FILE = ".gpulab-seen.json"


class WorkspaceError(Exception):
    """The workspace cannot be used (not a folder, not writable); str() is one line."""


@dataclass(frozen=True)
class Stamp:
    """A file's modification time and content hash, to tell whether it changed."""

    mtime_ns: int
    sha256: str


def default_root() -> Path:
    """The learner's exercise folder: the environment's choice, else the data dir's exercises/."""
    env = os.environ.get(WORKDIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    return data_dir() / "exercises"


def stamp(path: Path) -> Stamp | None:
    """The file's Stamp, or None when it cannot be read."""
    try:
        data = path.read_bytes()
        return Stamp(path.stat().st_mtime_ns, hashlib.sha256(data).hexdigest())
    except OSError:
        return None


def _atomic_write(path: Path, text: str, *, durable: bool = False) -> None:
    """Write through a temporary file and a rename, so a reader (the grader, an editor) never
    sees half a file. `durable`: fsync first, so a power cut keeps the text too."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    tmp.replace(path)


class Workspace:
    """The folder of a learner's exercise files: starters copied in, edits tracked, backups kept."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_root()

    def _ready(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise WorkspaceError(f"the workspace {self.root} is a file, not a folder")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the workspace {self.root}: {exc.strerror or exc}"
            ) from None

    def path(self, ex: Exercise) -> Path:
        """Where the learner's file for `ex` lives."""
        return self.root / ex.file_name

    def exists(self, ex: Exercise) -> bool:
        """True when the learner's file for `ex` exists."""
        return self.path(ex).is_file()

    def ensure(self, ex: Exercise) -> Path:
        """The learner's file, created from the starter if it is not there yet."""
        path = self.path(ex)
        if path.is_file():
            return path
        self._ready()
        try:
            _atomic_write(path, ex.starter_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.mark_seen(ex)
        return path

    def untouched(self, ex: Exercise) -> bool:
        """The file is still the starter, byte for byte (or does not exist yet)."""
        path = self.path(ex)
        if not path.is_file():
            return True
        return path.read_bytes() == ex.starter_path.read_bytes()

    def reset(self, ex: Exercise) -> tuple[Path, Path | None]:
        """Put the starter back: (the file, the backup of the learner's version or None when it
        was still the starter or absent)."""
        self._ready()
        path = self.path(ex)
        backup = None
        if path.is_file() and not self.untouched(ex):
            backup = self.backup(ex)
        try:
            _atomic_write(path, ex.starter_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.mark_seen(ex)
        return path, backup

    def write(self, ex: Exercise, text: str) -> Stamp | None:
        """Save an editor's text to the learner's file (atomically, durably) and remember it as
        seen; returns its stamp. Raises WorkspaceError when it cannot be written."""
        self._ready()
        try:
            _atomic_write(self.path(ex), text, durable=True)
        except OSError as exc:
            raise WorkspaceError(f"cannot write {self.path(ex)}: {exc.strerror or exc}") from None
        return self.mark_seen(ex)

    def keep_aside(self, ex: Exercise, text: str, tag: str) -> Path:
        """Save a version that is not the file's (an editor's text that lost a conflict) in
        `.backups/`, beside reset's backups; returns where."""
        target = self._backup_target(ex, tag)
        try:
            _atomic_write(target, text)
        except OSError as exc:
            raise WorkspaceError(f"cannot back up to {target}: {exc.strerror or exc}") from None
        return target

    def _backup_target(self, ex: Exercise, tag: str = "") -> Path:
        folder = self.root / BACKUPS
        folder.mkdir(parents=True, exist_ok=True)
        stem = Path(ex.file_name).stem + (f".{tag}" if tag else "")
        when = time.strftime("%Y%m%d-%H%M%S")
        target = folder / f"{stem}.{when}.py"
        n = 1
        while target.exists():  # two in one second keep both versions
            n += 1
            target = folder / f"{stem}.{when}-{n}.py"
        return target

    def backup(self, ex: Exercise) -> Path:
        """Copy the learner's file for `ex` into the backups folder; the copy's path."""
        target = self._backup_target(ex)
        try:
            target.write_bytes(self.path(ex).read_bytes())
        except OSError as exc:
            raise WorkspaceError(f"cannot back up to {target}: {exc.strerror or exc}") from None
        return target

    def backups(self, ex: Exercise) -> list[Path]:
        """The backups of `ex`'s file, oldest first."""
        stem = Path(ex.file_name).stem
        return sorted((self.root / BACKUPS).glob(f"{stem}.*.py"))

    # --- outside edits ------------------------------------------------------------------------
    def _seen(self) -> dict[str, dict[str, object]]:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads((self.root / SEEN_FILE).read_text())
            if isinstance(data, dict):
                return data
        return {}

    def mark_seen(self, ex: Exercise) -> Stamp | None:
        """Remember the file as it is now (after gpulab wrote it, or a UI loaded or saved it)."""
        now = stamp(self.path(ex))
        if now is None:
            return None
        seen = self._seen()
        seen[ex.file_name] = {"mtime_ns": now.mtime_ns, "sha256": now.sha256}
        with contextlib.suppress(OSError):
            _atomic_write(self.root / SEEN_FILE, json.dumps(seen, indent=1))
        return now

    def edited_outside(self, ex: Exercise) -> bool:
        """The file's text changed since gpulab last saw it. A touch that keeps the text (an
        editor saving without changes) is not an edit: the hash decides, the mtime only
        saves reading the file when it did not move."""
        entry = self._seen().get(ex.file_name)
        path = self.path(ex)
        if not isinstance(entry, dict):
            return path.is_file()
        try:
            if path.stat().st_mtime_ns == entry.get("mtime_ns"):
                return False
        except OSError:
            return True  # deleted since
        now = stamp(path)
        return now is None or now.sha256 != entry.get("sha256")
