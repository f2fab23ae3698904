"""Cold start: what a brand-new Python process pays before its first result, step by step.

The lab's worker is warm (torch imported, CUDA context made), so the Monte Carlo's "cold" column
only shows the first call's module load. Here a fresh interpreter is spawned, as `python
script.py` would be, and times each step on its own: the interpreter starting, `import torch`,
creating the CUDA context, the first call of a small workload (kernel modules loaded lazily,
the launch) and the second call. The same workload is then timed in this warm worker, so the
fresh process's total and this worker's median sit side by side. On the CPU there is no context:
the rows are the import and the first and second calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Measurement, Result
from gpulab.experiments import fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import duration, times

CHILD_TIMEOUT_S = 180.0

# Runs in the fresh interpreter: no gpulab import, nothing but the steps being timed. Wall-clock
# time.time() is comparable across processes, so the parent's spawn time gives "python start".
CHILD = r"""
import json, sys, time
t0 = time.time()
spawned, dev, n = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
import torch
steps = {"python_start": t0 - spawned, "import_torch": time.time() - t0}
if dev.startswith("cuda"):
    s = time.perf_counter()
    torch.zeros(1, device=dev)
    torch.cuda.synchronize(dev)
    steps["cuda_context"] = time.perf_counter() - s
def op():
    x = torch.rand(n, 2, device=dev)
    return int(((x * x).sum(1) <= 1).sum().item())
for name in ("first_call", "second_call"):
    s = time.perf_counter()
    hits = op()
    steps[name] = time.perf_counter() - s
steps["hits"] = hits
print("GPULAB-COLD " + json.dumps(steps), flush=True)
"""

STEPS = {
    "python_start": "start the Python interpreter",
    "import_torch": "import torch",
    "cuda_context": "create the CUDA context (first CUDA call)",
    "first_call": "first call of the op (kernel modules load, launch)",
    "second_call": "second call of the op",
}


def workload(torch: Any, dev: Any, n: int) -> Any:
    """The op both processes time: a Monte Carlo estimate of pi's hit count on n points."""

    def op() -> int:
        x = torch.rand(n, 2, device=dev)
        return int(((x * x).sum(1) <= 1).sum().item())

    return op


def fit_bytes(n: int) -> int:
    """x (2n floats), x*x and its row sums and the comparison, in this process and the child."""
    return 2 * int(n * (8 + 8 + 4 + 1) * 1.1) + fits.SLACK_BYTES


def fresh_process(ctx: Context, dev: str, n: int) -> dict[str, float]:
    """Spawn a new interpreter that times its own cold start; wait for it, cancellably."""
    spawned = time.time()
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter running our own script
        [sys.executable, "-c", CHILD, repr(spawned), dev, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise ExperimentError(
                    f"the fresh process took over {CHILD_TIMEOUT_S:.0f} s and was stopped"
                )
            ctx.sleep(0.02)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:  # cancelled or timed out: end the child we started
            proc.kill()
            proc.wait()
    line = next((x for x in out.splitlines() if x.startswith("GPULAB-COLD ")), "")
    if proc.returncode != 0 or not line:
        last = (err.strip().splitlines() or ["no output"])[-1]
        raise ExperimentError(f"the fresh process failed (exit {proc.returncode}): {last}")
    return json.loads(line.removeprefix("GPULAB-COLD "))


def step_row(contender: str, step: str, seconds: float, runs: int, spread: list[float]) -> Any:
    """A results row for one step of a cold start (import, context, first call)."""
    return Measurement(
        contender=contender,
        size=STEPS.get(step, step),
        time_median_s=seconds,
        time_min_s=min(spread),
        time_max_s=max(spread),
        runs=runs,
        note="one fresh process" if runs == 1 else f"median of {runs} fresh processes",
        extra={"step": step},
    )


class ColdStart(Experiment):
    """The `cold-start` experiment: A new Python process: import torch, CUDA context, first call,
    each timed."""

    id = "cold-start"
    title = "Cold start of a fresh process"
    summary = "A new Python process: import torch, CUDA context, first call, each timed."
    lesson = "timing-honestly"
    params = ParamSet(
        (
            Int("n", 10_000_000, "points in the workload (x = torch.rand(n, 2))", min=1, max=2e9),
            Int("processes", 3, "fresh processes to spawn (median per step)", min=1, max=20),
        )
    )
    contenders = (
        Contender("fresh-gpu", "fresh process, GPU", "torch-cuda"),
        Contender("warm-gpu", "this warm worker, GPU", "torch-cuda"),
        Contender("fresh-cpu", "fresh process, CPU only", "torch-cpu"),
        Contender("warm-cpu", "this warm worker, CPU", "torch-cpu"),
    )
    bench_params = ({"n": 10_000_000, "processes": 3},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch

        result = self.new_result(ctx, params)
        gpu = ctx.has_cuda
        if gpu:
            for cid in ("fresh-cpu", "warm-cpu"):
                result.unavailable[cid] = "the GPU ran instead"
        n = int(params["n"])
        runs = 1 if ctx.quick else int(params["processes"])
        what = f"cold-start with n={n:,}"
        if gpu:
            fits.require_fit(ctx, fit_bytes(n), what)
        else:
            fits.require_host_fit(fit_bytes(n) - fits.SLACK_BYTES + fits.HOST_SLACK_BYTES, what)
        dev = ctx.torch_device if gpu else "cpu"
        where = "gpu" if gpu else "cpu"
        seen: list[dict[str, float]] = []
        for i in range(runs):
            ctx.progress(0.8 * i / runs, f"fresh process {i + 1} of {runs}: import, context, op")
            seen.append(fresh_process(ctx, dev, n))
        ctx.progress(0.8, "the same op in this warm worker")
        op = workload(torch, torch.device(dev), n)
        timing = ctx.timer.measure(op, sync="torch" if gpu else "none")
        fresh: dict[str, float] = {}
        for step in STEPS:
            values = sorted(s[step] for s in seen if step in s)
            if not values:
                continue
            fresh[step] = values[len(values) // 2]
            result_rows.emit(
                ctx, result, step_row(f"fresh-{where}", step, fresh[step], runs, values)
            )
        total = sum(fresh.get(k, 0.0) for k in ("import_torch", "cuda_context", "first_call"))
        warm = result_rows.emit(ctx, result, row(f"warm-{where}", "the op, warm (median)", timing))
        ctx.progress(1.0, "done")
        hits = {int(s["hits"]) for s in seen}
        s = {
            "device": where,
            "n": n,
            "processes": runs,
            "fresh_steps_s": fresh,
            "fresh_total_s": total,
            "warm_median_s": warm.time_median_s,
            "warm_cold_s": warm.cold_s,
            "hits_in_range": all(0.7 * n < h < 0.87 * n for h in hits),
        }
        if warm.time_median_s > 0:
            s["fresh_total_over_warm"] = total / warm.time_median_s
            s["fresh_first_call_over_warm"] = fresh.get("first_call", 0.0) / warm.time_median_s
            if warm.cold_s:
                s["worker_first_call_over_warm"] = warm.cold_s / warm.time_median_s
        result.summary = s
        result.explanation = explain(s, gpu)
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: a fresh process's time to its first result against the warm worker's median."""
        s = result.summary
        ratio = s.get("fresh_total_over_warm")
        if not ratio:
            return ""
        steps = (
            "import, CUDA context, first call" if s.get("device") == "gpu" else "import, first call"
        )
        return (
            f"a fresh process took {duration(s['fresh_total_s'])} to its first result ({steps}): "
            f"{times(ratio)} this warm worker's median for the same op"
        )


def explain(s: dict[str, Any], gpu: bool) -> str:
    """The cold-start run's explanation: where a fresh process's time went."""
    steps = s["fresh_steps_s"]
    text = (
        "A benchmark that starts a new process pays for everything before its first result: "
        "the interpreter, importing torch (thousands of files and shared libraries), "
    )
    if gpu:
        text += (
            "creating the CUDA context (the driver sets up the GPU for this process: hundreds "
            "of ms and hundreds of MiB), then on the first call loading the kernel modules the "
            "op needs (CUDA loads them lazily, on first use) and launching. "
        )
    else:
        text += (
            "then the first call (allocations, thread pools starting). There is no CUDA "
            "context on the CPU, so these are import and first-op times only. "
        )
    text += (
        f"Here: import {steps.get('import_torch', 0):.2f} s"
        + (f", context {steps['cuda_context']:.2f} s" if "cuda_context" in steps else "")
        + f", first call {steps.get('first_call', 0) * 1e3:.1f} ms, second call "
        f"{steps.get('second_call', 0) * 1e3:.2f} ms, against a warm median of "
        f"{s['warm_median_s'] * 1e3:.2f} ms in this worker. "
    )
    if s.get("fresh_total_over_warm"):
        text += f"The fresh process's total is {s['fresh_total_over_warm']:,.0f}x the warm figure"
        if s.get("worker_first_call_over_warm"):
            text += (
                f", while this worker's own first call was only "
                f"{s['worker_first_call_over_warm']:.1f}x: it had imported and made its "
                "context long before"
            )
        text += ". "
    text += (
        "So time the steady state after a warm-up, report the cold start as its own figure, "
        "and never compare a one-shot script's wall time with a warm library's median."
    )
    return text


EXPERIMENT = ColdStart()
