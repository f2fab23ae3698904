"""Putting back what a learner's call left on: an interval timer is stopped before its signal's
handler goes back to the default, or its next tick ends the process (a red team's 10 us SIGALRM
timer crashed a test process that way)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no interval timers")

_CHILD = textwrap.dedent(
    """
    import signal, sys
    from gpulab.exercises.sandbox import hooks, unhook

    ticks = []
    for _ in range(300):
        saved = hooks()
        signal.signal(signal.SIGALRM, lambda *_: ticks.append(1))
        signal.setitimer(signal.ITIMER_REAL, 2e-5, 2e-5)  # the red team ticked every 10 us
        for _ in range(2000):  # let some ticks land while the handler is the learner's
            pass
        names = unhook(saved)
        assert names[0] == "a handler of SIGALRM" and "signal.setitimer" in names, names
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    print("alive", len(ticks) > 0)
    """
)


def test_a_ticking_timer_is_stopped_before_its_handler_is_put_back():
    # In a child: with the old order its SIGALRM default action would end the process
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split() == ["alive", "True"], out.stdout
