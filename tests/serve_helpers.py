"""`gpulab serve` started for a test: on any free loopback port, its data in tmp, its output in
a log file (a pipe nobody reads could fill and stall it), killed by pid if a test leaves it."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 30.0


@contextlib.contextmanager
def served(tmp_path: Path, *flags: str) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    """(the server's process, its URL, its log)."""
    log = tmp_path / "serve.log"
    env = dict(os.environ, GPULAB_DATA_DIR=str(tmp_path / "data"))
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpulab", "serve", "--port", "0", *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := re.search(r"gpulab serve: (http://\S+)", log.read_text())):
            assert proc.poll() is None, f"gpulab serve exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"gpulab serve did not listen:\n{log.read_text()}"
            time.sleep(0.1)
        yield proc, found.group(1), log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
