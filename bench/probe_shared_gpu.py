"""On a GPU: does a check name another program that shares the GPU, and only then?

    python3 bench/probe_shared_gpu.py OUTDIR

Three checks of each exercise below, through check_inline (the worker's code path): the first
with the GPU to itself, then two beside a child process that keeps the GPU busy with bf16
matrix products (started and ended by its pid). For each, the verdict, the grade, the clock
window's `others` and `shared`, and whether NVML's per-process utilization answered at all
(a driver or a container may not say). Then what NVML itself answered: every per-process
sample of the last seconds (pid, timestamp, SM and memory %), the compute processes it lists
and this process's pid, which tell the driver's sampling period and whether its pids are this
namespace's. Writes OUTDIR/shared-gpu.json and prints a summary.
"""

from __future__ import annotations

import json
import os
import signal
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


def _nvml(since_us: int) -> dict:
    """NVML's own answers for GPU 0 since `since_us`: raw samples and the compute processes."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    try:
        samples = [
            [int(x.pid), int(x.timeStamp), int(x.smUtil), int(x.memUtil)]
            for x in pynvml.nvmlDeviceGetProcessUtilization(h, since_us)
        ]
    except pynvml.NVMLError as exc:
        samples = [str(exc)]
    running = [int(p.pid) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
    return {"me": os.getpid(), "samples": samples, "running": running}


def _one(ex_id: str, seed: int, inv: object) -> dict:
    ex = find(ex_id)
    since = int(time.time() * 1e6)
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
        "throttle": window.get("throttle"),
        "nvml": _nvml(since),
    }


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    inv = detect()
    rows = [_one(e, 1, inv) for e in EXERCISES]
    # The busy program must not be the checker's child: gpulab counts its own children (ranks,
    # the spare worker) as its own. A shell starts it in the background and exits, so its
    # parent is init; it is ended by the pid the shell printed.
    ready = out / "busy-ready"
    ready.unlink(missing_ok=True)
    script = out / "busy.py"
    script.write_text(
        BUSY.replace('print("busy", flush=True)', f"open({str(ready)!r}, 'w').close()")
    )
    pid = int(
        subprocess.run(
            ["sh", "-c", f"{sys.executable} {script} >/dev/null 2>&1 & echo $!"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    try:
        while not ready.exists():
            time.sleep(0.1)
        rows += [_one(e, s, inv) for s in (2, 3) for e in EXERCISES]
        start = int(time.time() * 1e6)
        time.sleep(5)  # the busy program alone: its samples' spacing is the driver's period
        period = _nvml(start)
    finally:
        os.kill(pid, signal.SIGKILL)
    (out / "shared-gpu.json").write_text(
        json.dumps({"busy_pid": pid, "rows": rows, "busy_alone_5s": period}, indent=1)
    )
    for r in rows:
        print(
            f"{r['exercise']:14} seed {r['seed']}: {r['verdict']} {r['grade'] or ''} "
            f"shared={r['shared']} others={r['others']} retimed={r['retimed']} {r['seconds']} s "
            f"throttle={r['throttle']} nvml={str(r['nvml'])[:300]}"
        )
    print("busy alone 5 s:", str(period)[:1500])


if __name__ == "__main__":
    main()
