"""How a child process ended, in words: shared by the runner (a worker) and the ranks of a
multi-process experiment (core/ranks.py)."""

from __future__ import annotations

import os
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


# Off switch for every process gpulab starts ahead of need (the runner's spare worker, the
# ranks a collective check keeps standing by): each holds memory while it waits
NO_STANDBY_ENV = "GPULAB_NO_STANDBY"


def standby_off(env: dict[str, str] | None = None) -> bool:
    """Whether GPULAB_NO_STANDBY is set (in `env`, else this process's environment)."""
    value = (env or {}).get(NO_STANDBY_ENV, os.environ.get(NO_STANDBY_ENV, ""))
    return value.strip() in ("1", "true", "yes")


def start_time(pid: int) -> int | None:
    """The kernel's start tick of `pid` (None: gone, or a zombie): with the pid, it names one
    process. Linux's /proc; None everywhere else."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields follow the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])
