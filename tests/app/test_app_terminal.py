"""The real `gpulab` in a real pty: a terminal that goes away, and the exit status.

The process is started on the slave side of a pty as its controlling terminal (as a login shell
or tmux would); the test plays the terminal from the master side. Processes are watched by pid
(a zombie counts as gone: its parent may be gone too, and reaping it is not its doing).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpulab import cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="ptys and /proc: Linux")

EXIT_WITHIN_S = 1.0
# Makes the pty the controlling terminal of a new session, then becomes gpulab.
LAUNCH = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, '-m', 'gpulab'])"
)


class Terminal:
    """gpulab on a pty of 80x24; `master` is our end of it (None once closed)."""

    def __init__(self, tmp_path: Path) -> None:
        import fcntl
        import struct
        import termios

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", CUDA_VISIBLE_DEVICES="")
        env["GPULAB_DATA_DIR"] = str(tmp_path / "data")
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.screen = b""

    def read(self, timeout: float) -> None:
        if self.master is None:
            return
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            with contextlib.suppress(OSError):  # the slave side closed
                self.screen += os.read(self.master, 1 << 16)

    def wait_for(self, text: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            assert self.proc.poll() is None, f"gpulab exited early: {self.screen[-2000:]!r}"
            assert time.monotonic() < deadline, f"no {text!r} on screen in {timeout} s"
            self.read(0.1)

    def press(self, keys: bytes) -> None:
        assert self.master is not None
        os.write(self.master, keys)

    def close(self) -> None:
        if self.master is not None:
            os.close(self.master)
            self.master = None

    def end(self) -> None:
        """Whatever the test did: nothing it started outlives it."""
        self.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def seconds_until(condition: Callable[[], bool], limit: float, during: Callable[[], None]) -> float:
    start = time.monotonic()
    while not condition():
        took = time.monotonic() - start
        if took > limit:
            return took
        during()
        time.sleep(0.01)
    return time.monotonic() - start


@pytest.fixture
def terminal(tmp_path):
    term = Terminal(tmp_path)
    yield term
    term.end()


def _up(term: Terminal) -> list[int]:
    """Wait for the worker's handshake on screen; the worker pids (active and spare)."""
    term.wait_for(b"worker pid", 120)
    workers = children(term.proc.pid)
    assert workers, "gpulab started no worker"
    return workers


def _gone_in_time(term: Terminal, workers: list[int], during: Callable[[], None]) -> None:
    pid = term.proc.pid
    took = seconds_until(lambda: term.proc.poll() is not None, EXIT_WITHIN_S + 4, during)
    assert took <= EXIT_WITHIN_S, f"gpulab took {took:.2f} s to leave after its terminal went"
    left = [w for w in workers + children(pid) if running(w)]
    assert not left, f"workers {left} outlived gpulab"
    assert term.proc.returncode == 128 + signal.SIGHUP


def test_sighup_ends_gpulab_and_its_workers_within_a_second(terminal):
    workers = _up(terminal)
    os.kill(terminal.proc.pid, signal.SIGHUP)
    _gone_in_time(terminal, workers, lambda: terminal.read(0))


def test_a_terminal_that_stalls_then_closes_mid_run(terminal):
    """The 8 s case: a run drawing to a terminal nobody reads, then the terminal closes."""
    workers = _up(terminal)
    terminal.press(b"r")  # the experiment panel has the keyboard at start: a run begins
    time.sleep(1.0)  # nobody reads: the frames back up
    terminal.close()
    _gone_in_time(terminal, workers, lambda: None)


def test_a_crash_in_the_app_exits_non_zero(monkeypatch, capsys):
    """`gpulab` (cli._tui) returns the app's failure status and says so in one line."""
    import gpulab.app.app
    from gpulab.testing.fake_runner import FakeRunner

    class Crashing(gpulab.app.app.GpuLabApp):
        def __init__(self, **kw):
            super().__init__(runner_factory=lambda **rk: FakeRunner(**rk), **kw)

        def on_ready(self) -> None:
            raise RuntimeError("a bug in the app")

        def run(self, **kw):
            return super().run(headless=True, size=(80, 24), **kw)

    monkeypatch.setattr(gpulab.app.app, "GpuLabApp", Crashing)
    assert cli.main([]) == 1
    err = capsys.readouterr().err
    assert "gpulab: the lab stopped on an internal error" in err


def test_a_normal_quit_exits_zero(monkeypatch, capsys):
    import gpulab.app.app
    from gpulab.testing.fake_runner import FakeRunner

    class Quitting(gpulab.app.app.GpuLabApp):
        def __init__(self, **kw):
            super().__init__(runner_factory=lambda **rk: FakeRunner(**rk), **kw)

        async def on_ready(self) -> None:
            await self.action_quit()

        def run(self, **kw):
            return super().run(headless=True, size=(80, 24), **kw)

    monkeypatch.setattr(gpulab.app.app, "GpuLabApp", Quitting)
    assert cli.main([]) == 0
    assert "internal error" not in capsys.readouterr().err
