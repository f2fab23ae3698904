"""Stand-ins for `ncu` and `compute-sanitizer` that replay output recorded on a GPU.

`python -m gpulab.testing.fake_nvtools ncu ARGS...` (or `compute-sanitizer ARGS...`) behaves as
the tool would for gpulab.explain, driven by GPULAB_FAKE_NVTOOLS:

- `replay:<dir>/<label>`: ncu prints a progress line, writes the report given to --export, and
  `--import ... --page raw|details|source` prints `<label>.raw.csv` / `<label>.details.csv` /
  `<label>.source.csv` (nothing when that page was not recorded);
  compute-sanitizer prints `<label>.<tool>.txt` for the --tool asked;
- `perm`: ncu fails as it does without access to the counters (ERR_NVGPUCTRPERM);
- `hang`: prints a progress line and sleeps (for cancel);
- `nokernel`: ncu runs but profiles nothing.

GPULAB_FAKE_NVTOOLS_LOG, if set, gets each command line (one JSON list a line), so a test can
read what gpulab asked for. Tests put a two-line shell wrapper on GPULAB_NCU / GPULAB_SANITIZER.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

PERM_TEXT = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU"
    " Performance Counters on the target device 0. For instructions on enabling permissions and"
    " to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
)


def _arg(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None


def ncu(argv: list[str], mode: str) -> int:
    if "--import" in argv:
        label = mode.split(":", 1)[1]
        page = _arg(argv, "--page") or "details"
        recorded = Path(f"{label}.{page}.csv")
        if page == "source" and not recorded.is_file():
            return 0  # a pass recorded without its source page: no counters by line
        sys.stdout.write(recorded.read_text())
        return 0
    if mode == "perm":
        sys.stdout.write("==PROF== Connected to process 4242\n" + PERM_TEXT)
        return 1
    if mode == "hang":
        print('==PROF== Profiling "kernel": 0%....', flush=True)
        time.sleep(120)
        return 0
    if mode == "nokernel":
        print("==WARNING== No kernels were profiled.", flush=True)
        return 0
    label = mode.split(":", 1)[1]
    head = Path(f"{label}.raw.csv").read_text().splitlines()
    name = head[2].split('","')[4] if len(head) > 2 else "kernel"
    print(f'==PROF== Profiling "{name}": 0%....50%....100% - 40 passes', flush=True)
    report = _arg(argv, "--export")
    if report:
        Path(report).write_bytes(b"recorded elsewhere: this stands in for an .ncu-rep\n")
    return 0


def sanitizer(argv: list[str], mode: str) -> int:
    tool = _arg(argv, "--tool") or "memcheck"
    if mode == "hang":
        time.sleep(120)
        return 0
    label = mode.split(":", 1)[1]
    text = Path(f"{label}.{tool}.txt").read_text()
    sys.stdout.write(text)
    return 1 if "ERROR SUMMARY: 0 errors" not in text and "SUMMARY: 0 hazard" not in text else 0


def install(monkeypatch: Any, folder: Path, mode: str) -> Path:
    """Put fake `ncu` and `compute-sanitizer` on GPULAB_NCU / GPULAB_SANITIZER for one test,
    replaying `mode` (see above); returns the file the command lines are logged to."""
    root = Path(__file__).resolve().parents[2]
    for tool, env in (("ncu", "GPULAB_NCU"), ("compute-sanitizer", "GPULAB_SANITIZER")):
        wrapper = folder / f"fake-{tool}"
        wrapper.write_text(
            f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" -m'
            f' gpulab.testing.fake_nvtools {tool} "$@"\n'
        )
        wrapper.chmod(0o755)
        monkeypatch.setenv(env, str(wrapper))
    log = folder / "nvtools.log"
    monkeypatch.setenv("GPULAB_FAKE_NVTOOLS", mode)
    monkeypatch.setenv("GPULAB_FAKE_NVTOOLS_LOG", str(log))
    return log


def main(argv: list[str]) -> int:
    log = os.environ.get("GPULAB_FAKE_NVTOOLS_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(argv) + "\n")
    mode = os.environ.get("GPULAB_FAKE_NVTOOLS", "nokernel")
    tool, rest = argv[0], argv[1:]
    return ncu(rest, mode) if tool == "ncu" else sanitizer(rest, mode)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
