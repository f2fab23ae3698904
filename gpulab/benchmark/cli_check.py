"""`gpulab bench --suite cli`: a check from the shell, `gpulab ex check NAME`, as a learner runs it.

Each check is a fresh `gpulab` process, timed from its start to its exit, in a data dir and a
workspace of its own (the learner's progress is not touched) with the reference solution as the
learner's file. The first check starts the learner's warm worker (gpulab.runner.warm) and, in
the fresh data dir, calibrates the device; then `repeat` checks reuse the warm worker: their
median is the figure (target: 1.5 s on a CPU machine, 1 s on a GPU one). Beside them, checks
with GPULAB_WARM_WORKER=0 start and stop a worker each, as every check did before. The warm
worker is stopped at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpulab.benchmark.targets import judge
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.workspace import Workspace

TARGET_CPU_S = 1.5
TARGET_GPU_S = 1.0
COLD_CHECKS = 2


def _gpulab(env: dict[str, str], *argv: str, timeout: float = 600) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    seconds = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise RuntimeError(f"gpulab {' '.join(argv)}: {done.stderr.strip()[-400:]}")
    return seconds, done.stdout


def _check(env: dict[str, str], exercise: str) -> dict[str, Any]:
    seconds, out = _gpulab(env, "ex", "check", exercise, "--json")
    check = json.loads(out)["check"]
    return {"wall_s": round(seconds, 3), "verdict": check["verdict"], "check_s": check["seconds"]}


def cli_part(gpu: bool, exercise: str = "vector-add", repeat: int = 5) -> dict[str, Any]:
    """The first, warm and cold `gpulab ex check` of `exercise`, each as a learner's shell
    runs it."""
    ex = load_catalog().get(exercise)
    with tempfile.TemporaryDirectory(prefix="gpulab-bench-cli-") as tmp:
        env = {
            **os.environ,
            "GPULAB_DATA_DIR": str(Path(tmp) / "data"),
            "GPULAB_WORKDIR": str(Path(tmp) / "work"),
            "GPULAB_WARM_WORKER": "1",
            "GPULAB_WARM_IDLE_S": "300",
        }
        mine = Workspace(env["GPULAB_WORKDIR"]).ensure(ex)
        shutil.copyfile(ex.solution_path, mine)
        try:
            first = _check(env, ex.id)
            warm = [_check(env, ex.id) for _ in range(repeat)]
            cold_env = {**env, "GPULAB_WARM_WORKER": "0"}
            cold = [_check(cold_env, ex.id) for _ in range(COLD_CHECKS)]
        finally:
            _gpulab(env, "ex", "worker", "--stop", timeout=60)
    seconds = [c["wall_s"] for c in warm]
    return {
        "exercise": ex.id,
        "how": (
            "`gpulab ex check NAME --json` in a fresh process, timed from its start to its exit;"
            " a fresh data dir and workspace, the reference solution as the learner's file; the"
            " first check starts the warm worker and calibrates, the next ones reuse it"
        ),
        "first": first,
        "warm": warm,
        "warm_median_s": statistics.median(seconds),
        "warm_max_s": max(seconds),
        "cold": cold,
        "cold_median_s": statistics.median(c["wall_s"] for c in cold),
        "target_s": TARGET_GPU_S if gpu else TARGET_CPU_S,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def comparisons(part: dict[str, Any]) -> list[dict[str, Any]]:
    """The claim: a repeat check from the shell, with a warm worker, within its target."""
    passed = all(c["verdict"] == "pass" for c in part["warm"])
    return [
        judge(
            f"cli: repeat `gpulab ex check {part['exercise']}`, warm worker, median of"
            f" {len(part['warm'])}",
            f"<= {part['target_s']:g} s",
            part["warm_median_s"] if passed else None,
            part["target_s"],
            higher=False,
        )
    ]


def markdown_lines(part: dict[str, Any]) -> list[str]:
    """The part as a Markdown table: the first, warm and cold checks."""
    rows = [("first (starts the warm worker, calibrates)", part["first"])]
    rows += [(f"warm {i + 1}", c) for i, c in enumerate(part["warm"])]
    rows += [(f"cold {i + 1} (GPULAB_WARM_WORKER=0)", c) for i, c in enumerate(part["cold"])]
    lines = ["", f"## `gpulab ex check {part['exercise']}` from the shell", ""]
    lines += ["| check | wall s | check s | verdict |", "|---|---|---|---|"]
    lines += [f"| {n} | {c['wall_s']:.2f} | {c['check_s']:.2f} | {c['verdict']} |" for n, c in rows]
    lines.append("")
    lines.append(
        f"Warm median {part['warm_median_s']:.2f} s (target {part['target_s']:g} s); cold median"
        f" {part['cold_median_s']:.2f} s; load average {part['load_average_1m']}."
    )
    return lines
