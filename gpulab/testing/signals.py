"""A child process's signals as a terminal gives them, for tests that send it one."""

from __future__ import annotations

import signal


def default_signals() -> None:
    """Reset SIGINT and SIGHUP to their defaults (a Popen `preexec_fn`). A process started under
    `nohup`, or as a background job of a shell without job control, inherits them ignored, and an
    ignored disposition survives exec: the child would then never see the signal the test sends
    (Python installs its KeyboardInterrupt handler only when SIGINT is not ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
