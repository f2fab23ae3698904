"""Where a warm worker listens, and the checks that keep it the learner's alone.

One warm worker serves one setting: the data dir, the Python that runs gpulab, where gpulab is
installed and the environment that changes what a worker does (the GPUs it may see, extra
exercise folders). A command in another setting gets a worker of its own, so the socket's name
carries a short hash of all of these. The socket is in a private folder (mode 0700, owned by this
user, not a link): `$XDG_RUNTIME_DIR/gpulab`, else `<data dir>/run`, else, when that path is too
long for a socket, `<tmp>/gpulab-<uid>`. The socket itself is 0600; the server also asks the
kernel who connected (SO_PEERCRED) and answers only its own user.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import gpulab
from gpulab.core.datadir import resolve as data_dir
from gpulab.core.errors import GpulabError

OFF_ENV = "GPULAB_WARM_WORKER"  # "0": every `gpulab ex check` starts and stops its own worker
IDLE_ENV = "GPULAB_WARM_IDLE_S"  # seconds without work before a warm worker stops
IDLE_S = 15 * 60.0
# What changes a worker's answers, beside the data dir: the GPUs it sees, the exercises it finds.
SETTING_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "GPULAB_EXERCISES_PATH",
    "GPULAB_FORCE_CPU",
    "GPULAB_NO_STANDBY",
    "PYTHONPATH",
)
_SUN_PATH_MAX = 100  # bytes of a socket path Linux and macOS both take (108 and 104)


class NotPrivate(GpulabError):
    """The socket's folder could be opened by another user; no warm worker is used there."""


def wanted() -> bool:
    """Whether commands use a warm worker (on unless GPULAB_WARM_WORKER=0, or off this OS)."""
    return os.environ.get(OFF_ENV, "1").strip() not in ("0", "no", "off", "false") and hasattr(
        socket, "AF_UNIX"
    )


def idle_seconds() -> float:
    """How long a warm worker waits for work before it stops (GPULAB_WARM_IDLE_S, else 15 min)."""
    try:
        return max(1.0, float(os.environ.get(IDLE_ENV, IDLE_S)))
    except ValueError:
        return IDLE_S


def setting() -> dict[str, str]:
    """What a warm worker must share with the command that uses it."""
    return {
        "data_dir": str(data_dir().resolve()),
        "python": sys.executable,
        "gpulab": str(Path(gpulab.__file__).resolve().parent),
        "version": gpulab.__version__,
        **{k: os.environ.get(k, "") for k in SETTING_ENV},
    }


@dataclass(frozen=True)
class Place:
    """The files of one warm worker: its socket, its lock (held while it lives) and its log."""

    folder: Path
    key: str

    @property
    def socket(self) -> Path:
        """The Unix socket the worker listens on."""
        return self.folder / f"worker-{self.key}.sock"

    @property
    def lock(self) -> Path:
        """Locked by the serving process for its whole life: one server per setting."""
        return self.folder / f"worker-{self.key}.lock"

    @property
    def log(self) -> Path:
        """The server's own stderr (a start that failed says why here)."""
        return self.folder / f"worker-{self.key}.log"


def place() -> Place:
    """Where the warm worker of this setting lives; the folder is made private (NotPrivate when
    it cannot be)."""
    key = hashlib.sha256(json.dumps(setting(), sort_keys=True).encode()).hexdigest()[:12]
    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        candidates.append(Path(runtime) / "gpulab")
    candidates.append(data_dir() / "run")
    candidates.append(Path(tempfile.gettempdir()) / f"gpulab-{os.getuid()}")
    for folder in candidates:
        found = Place(folder, key)
        if len(os.fsencode(str(found.socket))) <= _SUN_PATH_MAX:
            private_dir(folder)
            return found
    raise NotPrivate("no folder short enough for the warm worker's socket")


def private_dir(folder: Path) -> None:
    """Make `folder` (mode 0700) or check it: ours, a real folder, open to nobody else."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=True)
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise NotPrivate(f"{folder} is not a folder")
    if st.st_uid != os.getuid():
        raise NotPrivate(f"{folder} belongs to another user")
    if st.st_mode & 0o077:
        os.chmod(folder, 0o700)  # ours: close it (an older gpulab, or a umask of 022)


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket, where the OS says."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid
