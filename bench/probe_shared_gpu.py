"""On a GPU: does a check name another program that shares the GPU, and only then?

    python3 bench/probe_shared_gpu.py OUTDIR

Three checks of each exercise below, through check_inline (the worker's code path): the first
with the GPU to itself, then two beside a child process that keeps the GPU busy with bf16
matrix products (started and ended by its pid). For each, the verdict, the grade, the clock
window's `others` and `shared`, and whether NVML's per-process utilization answered at all
(a driver or a container may not say). Writes OUTDIR/shared-gpu.json and prints a summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.core.devices import detect  # noqa: E402
from gpulab.exercises.job import check_inline  # noqa: E402
from gpulab.exercises.loader import find  # noqa: E402

EXERCISES = ("zip-add", "honest-timing", "bandwidth")
BUSY = """
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("busy", flush=True)
while True:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
"""


def _one(ex_id: str, seed: int, inv: object) -> dict:
    ex = find(ex_id)
    t0 = time.perf_counter()
    result, _ = check_inline(ex.id, str(ex.solution_path), seed, quick=False, inventory=inv)
    timing = result.timing or {}
    window = timing.get("window") or {}
    return {
        "exercise": ex_id,
        "seed": seed,
        "verdict": result.verdict,
        "grade": result.grade,
        "seconds": round(time.perf_counter() - t0, 2),
        "message": result.message[-400:],
        "others": window.get("others"),
        "shared": window.get("shared"),
        "retimed": timing.get("retimed"),
    }


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    inv = detect()
    rows = [_one(e, 1, inv) for e in EXERCISES]
    busy = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout is not None
        busy.stdout.readline()  # its matrix is made: the loop is running
        rows += [_one(e, s, inv) for s in (2, 3) for e in EXERCISES]
    finally:
        busy.kill()
        busy.wait()
    (out / "shared-gpu.json").write_text(json.dumps({"busy_pid": busy.pid, "rows": rows}, indent=1))
    for r in rows:
        print(
            f"{r['exercise']:14} seed {r['seed']}: {r['verdict']} {r['grade'] or ''} "
            f"shared={r['shared']} others={r['others']} retimed={r['retimed']} {r['seconds']} s"
        )


if __name__ == "__main__":
    main()
