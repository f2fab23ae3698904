"""Finding NVIDIA's command-line tools and running one in its own process, with progress and
cancel: Nsight Compute (`ncu`) for Tier 1, compute-sanitizer for Tier 2.

No GPU library is imported here: the UI may call it from a thread. A tool runs in a new session
(its own process group), so cancel ends the tool and the Python process under it together.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab.core.errors import Cancelled


@dataclass
class Ran:
    rc: int
    out: str
    err: str
    seconds: float


def run(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    on_line: Callable[[str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    timeout: float = 120.0,
) -> Ran:
    """Run `argv`, calling on_line with each line it writes (stdout and stderr), polling `cancel`
    ten times a second; Cancelled when it says so, TimeoutError past `timeout` seconds (the
    whole process group is ended either way)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(  # noqa: S603 - argv is built by this package, not by a shell
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    chunks: dict[str, list[str]] = {"out": [], "err": []}

    def pump(stream: Iterable[str], key: str) -> None:
        for line in stream:
            chunks[key].append(line)
            if on_line is not None:
                with contextlib.suppress(Exception):  # a progress callback never breaks a run
                    on_line(line.rstrip("\n"))

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, "out"), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, "err"), daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        while proc.poll() is None:
            if cancel is not None and cancel():
                _end(proc)
                raise Cancelled("cancelled")
            if time.perf_counter() - t0 > timeout:
                _end(proc)
                raise TimeoutError(f"{Path(argv[0]).name} ran past {timeout:.0f} s")
            time.sleep(0.1)
    except BaseException:  # re-raised: Ctrl-C or a cancel must not leave the tool running
        if proc.poll() is None:  # Ctrl-C in the caller: the tool must not outlive it
            _end(proc)
        raise
    finally:
        for t in threads:
            t.join(timeout=5)
    return Ran(
        proc.returncode, "".join(chunks["out"]), "".join(chunks["err"]), time.perf_counter() - t0
    )


def _end(proc: subprocess.Popen[str]) -> None:
    """End the process group this module started (the tool and the Python under it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def python_env() -> dict[str, str]:
    """The environment for the profiled Python: this one, with gpulab importable and every
    memory pool off (a pool hides an access past the end of an array from the sanitizer)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def target_argv(
    file: Path | str,
    *,
    exercise: str | None = None,
    driver: Path | str | None = None,
    fill: int = 64 << 20,
    calls: int = 2,
) -> list[str]:
    """The command line of the process a tool wraps (gpulab.explain.target)."""
    argv = [sys.executable, "-m", "gpulab.explain.target", "--file", str(file)]
    if driver is not None:
        argv += ["--driver", str(driver)]
    elif exercise:
        argv += ["--exercise", exercise]
    return argv + ["--fill", str(int(fill)), "--calls", str(int(calls))]
