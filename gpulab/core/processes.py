"""How a child process ended, in words: shared by the runner (a worker) and the ranks of a
multi-process experiment (core/ranks.py)."""

from __future__ import annotations

import signal


def describe_exit(returncode: int) -> tuple[str, int | None, str | None]:
    """(one-line description, exit code or None, signal name or None) of a finished process."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            name = sig.name
            desc = signal.strsignal(sig) or name
        except ValueError:
            name, desc = f"signal {-returncode}", f"signal {-returncode}"
        return f"was killed by {name} ({desc.lower()})", None, name
    return f"exited with code {returncode}", returncode, None
