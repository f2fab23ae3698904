"""Finding NVIDIA's command-line tools and running one in its own process, with progress and
cancel: Nsight Compute (`ncu`) for Tier 1, compute-sanitizer for Tier 2.

No GPU library is imported here: the UI may call it from a thread. A tool runs in a new session
(its own process group), so cancel ends the tool and the Python process under it together.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Where CUDA installs put them when they are not on PATH.
_SEARCH = {
    "ncu": (
        "/usr/local/cuda/bin/ncu",
        "/opt/nvidia/nsight-compute/*/ncu",
        "/usr/local/NVIDIA-Nsight-Compute*/ncu",
    ),
    "compute-sanitizer": (
        "/usr/local/cuda/bin/compute-sanitizer",
        "/usr/local/cuda/compute-sanitizer/compute-sanitizer",
    ),
}
_ENV = {"ncu": "GPULAB_NCU", "compute-sanitizer": "GPULAB_SANITIZER"}
FIX = {
    "ncu": "install Nsight Compute (the CUDA toolkit has it) or set GPULAB_NCU=/path/to/ncu",
    "compute-sanitizer": (
        "install the CUDA toolkit or pip install nvidia-cuda-sanitizer-api, or set"
        " GPULAB_SANITIZER=/path/to/compute-sanitizer"
    ),
}


def _wheel_sanitizer() -> list[str]:
    """compute-sanitizer from the nvidia-cuda-sanitizer-api wheel, if installed."""
    out = []
    for base in sys.path:
        out += glob.glob(
            os.path.join(base, "nvidia", "cuda_sanitizer_api", "*", "compute-sanitizer")
        )
    return out


def find(name: str) -> str | None:
    """The path of `ncu` or `compute-sanitizer`: $GPULAB_NCU / $GPULAB_SANITIZER, PATH,
    $CUDA_HOME/bin, the usual install folders, the sanitizer wheel; None when not found."""
    env = os.environ.get(_ENV.get(name, ""), "")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    cands = []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home:
            cands.append(os.path.join(home, "bin", name))
    for pattern in _SEARCH.get(name, ()):
        cands += sorted(glob.glob(pattern), reverse=True)  # the newest version folder first
    if name == "compute-sanitizer":
        cands += _wheel_sanitizer()
    return next((c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)), None)


class Cancelled(Exception):
    """The person cancelled the run."""


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

    def pump(stream: object, key: str) -> None:
        for line in stream:  # type: ignore[attr-defined]
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
    except BaseException:  # deferred: loaded when used
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
