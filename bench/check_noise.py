"""Where a check's low outlier comes from: one exercise checked many times under each condition.

A graded check times the learner's code for 10 to 30 ms (15 calls of a memory-bound kernel), so
anything that disturbs the GPU or the worker for a few milliseconds moves the median of a whole
check. This probe checks one solution `--checks` times under each condition and keeps, per
check, the learner's fraction of the ceiling, the library's fraction timed in the same check,
and the learner's fastest, median and slowest call:

  worker        the real worker process, as `gpulab ex check` and the TUI use it (its memory
                sampler thread reads cudaMemGetInfo 4 times a second during a job)
  inline        the check in this process: no worker, no sampler thread
  telemetry     the worker, with this process reading the TUI's telemetry frame (NVML: clocks,
                power, utilisation, PCIe, processes) every 0.25 s, the TUI's fastest rate
  nvidia-smi    the worker, with `nvidia-smi -lms 100` running beside it

A check is "low" when its fraction is under 0.85 of the condition's median. Low with the library
low too means the whole GPU was slow for that check; low with the library at its usual figure
means something in the learner's calls (the host, the launch).

    python bench/check_noise.py --exercise elementwise-fused --checks 60 \
        --json bench/results/check-noise-h100.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.ex.session import Checker  # noqa: E402
from gpulab.exercises.loader import find  # noqa: E402

CONDITIONS = ("worker", "inline", "telemetry", "nvidia-smi")
LOW = 0.85


def _row(result: Any) -> dict[str, Any]:
    t = result.timing or {}
    learner = t.get("learner") or {}
    library = t.get("library") or {}
    return {
        "passed": result.passed,
        "fraction": t.get("fraction"),
        "library_fraction": t.get("library_fraction"),
        "median_s": learner.get("median_s"),
        "min_s": learner.get("min_s"),
        "max_s": learner.get("max_s"),
        "runs": learner.get("runs"),
        "library_median_s": library.get("median_s"),
        "library_min_s": library.get("min_s"),
    }


@contextlib.contextmanager
def _telemetry(period: float):
    from gpulab.telemetry.sampler import TelemetryReader

    reader = TelemetryReader()
    stop = threading.Event()
    reads: list[float] = []

    def loop() -> None:
        while not stop.wait(period):
            t0 = time.perf_counter()
            reader.read()
            reads.append(time.perf_counter() - t0)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        yield reads
    finally:
        stop.set()
        th.join()
        reader.close()


@contextlib.contextmanager
def _smi():
    exe = shutil.which("nvidia-smi")
    if exe is None:
        yield None
        return
    proc = subprocess.Popen([exe, "-lms", "100"], stdout=subprocess.DEVNULL)
    try:
        yield proc.pid
    finally:
        proc.terminate()  # ours, by its handle
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


async def _condition(name: str, ex: Any, path: Path, checks: int) -> dict[str, Any]:
    inline = name == "inline"
    rows: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    async with Checker(inline=inline) as checker:
        if not inline:
            await checker.client.wait_ready(600)
            await checker.prepare(ex)
        else:
            await checker.check(ex, path, 999)  # compile and calibrate outside the sample
        stack = contextlib.ExitStack()
        with stack:
            if name == "telemetry":
                reads = stack.enter_context(_telemetry(0.25))
            elif name == "nvidia-smi":
                extra["nvidia_smi_pid"] = stack.enter_context(_smi())
            t0 = time.perf_counter()
            for k in range(checks):
                result, seconds = await checker.check(ex, path, 1000 + k)
                row = _row(result)
                row["t"] = time.perf_counter() - t0
                row["seconds"] = seconds
                rows.append(row)
            if name == "telemetry":
                extra["telemetry_reads"] = len(reads)
                extra["telemetry_read_ms_median"] = (
                    1e3 * statistics.median(reads) if reads else None
                )
    return {"condition": name, **extra, **summary(rows), "checks": rows}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The median fraction and the low checks of one condition's rows."""
    fr = [r["fraction"] for r in rows if r.get("fraction") is not None]
    if not fr:
        return {"median": None, "low": 0}
    med = statistics.median(fr)
    low = [r for r in rows if r.get("fraction") is not None and r["fraction"] < LOW * med]
    lib = [r["library_fraction"] for r in rows if r.get("library_fraction")]
    lib_med = statistics.median(lib) if lib else None
    both = [
        r
        for r in low
        if lib_med and r.get("library_fraction") and r["library_fraction"] < LOW * lib_med
    ]
    return {
        "median": med,
        "min": min(fr),
        "library_median": lib_med,
        "low": len(low),
        "low_with_library_low": len(both),
        "low_fractions": [round(r["fraction"], 3) for r in low],
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    ex = find(args.exercise)
    path = ex.expert_path if args.solution == "expert" else ex.solution_path
    out = {"exercise": ex.id, "solution": args.solution, "checks": args.checks, "conditions": []}
    for name in args.conditions:
        sys.stderr.write(f"  {name}\n")
        got = await _condition(name, ex, Path(path), args.checks)
        sys.stderr.write(
            f"    median {got['median']:.3f}  low {got['low']}/{args.checks} "
            f"(library low too: {got['low_with_library_low']}) {got['low_fractions']}\n"
        )
        out["conditions"].append(got)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--exercise", default="elementwise-fused")
    p.add_argument("--solution", choices=("expert", "reference"), default="expert")
    p.add_argument("--checks", type=int, default=60)
    p.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    out = asyncio.run(main_async(args))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
