"""What the worker process needs from the operating system around its jobs: to die with its
parent, to keep its pipes out of children an experiment forks, its resident memory for the
memory readings, and a job's stdout and stderr turned into `log` events line by line.

Separate from serve.py, which serves jobs: these are the process's plumbing, each small and
independent of the job protocol.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import signal
import sys
import threading
from typing import Any

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Second guard after pipe EOF: the kernel kills us when the parent dies."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    # The parent may have died before prctl ran; then we were re-parented already.
    if parent_pid and os.getppid() != parent_pid:
        os._exit(0)


def host_rss() -> int | None:
    """This process's resident memory, so the CPU fallback of a memory lesson has a number."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class LineStream(io.TextIOBase):
    """sys.stdout / sys.stderr during a job: each complete line becomes a `log` event of the job."""

    def __init__(self, emit_line: Any, stream: str) -> None:
        self._emit_line = emit_line
        self._stream = stream
        self._buf = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        """Always writable (print checks)."""
        return True

    def write(self, text: str) -> int:
        """Buffer `text` and emit each complete line."""
        with self._lock:
            self._buf += text
            *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self._emit_line(line, self._stream)
        return len(text)

    def flush(self) -> None:
        """Emit what is left of a line without its newline."""
        with self._lock:
            rest, self._buf = self._buf, ""
        if rest:
            self._emit_line(rest, self._stream)


def close_fds(*fds: int) -> None:
    """Close each fd, ignoring ones already closed."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
