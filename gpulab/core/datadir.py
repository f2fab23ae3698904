"""Is the data dir usable? Asked before a run, so a bad --data-dir costs no minutes of work."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from platformdirs import user_data_dir

from gpulab.core.errors import BadInput


def resolve() -> Path:
    """$GPULAB_DATA_DIR (the CLI's --data-dir sets it), else platformdirs' user data dir."""
    env = os.environ.get("GPULAB_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return Path(user_data_dir("gpulab"))


def problem(path: Path | None = None) -> str | None:
    """One line saying why gpulab cannot keep files in `path` (default: the data dir), or None.

    Creates the directory if it is missing; writability is tried with a real file, not
    os.access, which a read-only mount or an ACL can contradict.
    """
    path = resolve() if path is None else path
    if path.exists() and not path.is_dir():
        return f"the data dir {path} is a file, not a directory: choose another with --data-dir"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the data dir {path}: {exc.strerror or exc}"
    try:
        with tempfile.TemporaryFile(dir=path, prefix=".gpulab-probe-"):
            pass
    except OSError as exc:
        return (
            f"the data dir {path} is not writable ({exc.strerror or exc}):"
            " choose another with --data-dir"
        )
    return None


def require() -> None:
    """Raise BadInput (one line, exit 2) when the data dir cannot keep files: asked before a run
    or a bench, whose result would otherwise have nowhere to go after minutes of work."""
    bad = problem()
    if bad:
        raise BadInput(bad)
