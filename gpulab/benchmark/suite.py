"""`gpulab bench`: every benchmarked experiment at its bench_params, plus same-run comparisons.

Runs in this process (experiments.inline.run_job), after a fresh calibration of this device, so every
"% of peak" and every ratio below is against numbers measured minutes apart on the same machine.
Writes JSON (device, driver, versions, peaks, every result, the comparisons) and a Markdown table.

The comparisons are the headline targets:
- montecarlo: cupy-fused >= 600 G samples/s, >= 10x the torch recipe, device memory flat in samples
- blur: our kernel >= 3x torch conv2d, and >= 85% of the device copy bandwidth (both timed back to back)
- matmul: gpulab's torch bf16 TFLOP/s at n=8192 within 5% of torch.utils.benchmark.Timer,
  measured in interleaved rounds (`matmul_vs_timer`) so both see the same clocks
- montecarlo: the torch contender within 5% of the tutorials' recipe run warm, at 1e8 and 1e9
  samples, interleaved rounds (`montecarlo_torch.torch_vs_recipe`)

Honesty checks of the report: the ceilings a run ended with are the ones reported
(a figure re-measured mid-run is named, with its first value), and every row above 100% of its
ceiling is listed with its stated reason (`over_ceiling`).
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gpulab import __version__
from gpulab.benchmark import cli_check
from gpulab.benchmark import exercises as ex_bench
from gpulab.benchmark.claims import claims_comparisons
from gpulab.benchmark.targets import (
    MATMUL_CMP,
    blur_targets,
    ceilings_changed,
    contender_rows,
    montecarlo_targets,
    over_ceiling,
    syllabus_comparisons,
)
from gpulab.core import events as ev
from gpulab.core import peaks as pk
from gpulab.core.devices import detect
from gpulab.core.peaks import data_dir
from gpulab.experiments.base import Context
from gpulab.experiments.inline import run_job
from gpulab.experiments.matmul import benchmark_timer_tflops
from gpulab.experiments.montecarlo_torch import torch_vs_recipe
from gpulab.experiments.registry import all_experiments

MC_RECIPE_SAMPLES = (100_000_000, 1_000_000_000)

# Tiny params for `quick` (tests and a fast look on the CPU): same code paths, seconds not minutes.
QUICK_PARAMS: dict[str, tuple[dict[str, Any], ...]] = {
    "montecarlo": ({"samples": 100_000},),
    "blur": ({"image": "synthetic", "width": 64, "height": 48, "kernel": "gaussian", "radius": 2},),
    "matmul": ({"sizes": [64, 128], "dtypes": ["fp32"], "contenders": ["python", "numpy"]},),
}


def device_slug(name: str, cpu: bool) -> str:
    """A short file-name slug for the device (h100, a100, cpu, ...)."""
    if cpu:
        return "cpu"
    m = re.search(r"\b([AHBLV]\d{2,3}|GH\d+|GB\d+)\b", name)
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# core and full: one GPU; exercises: the catalog through a worker; multi-gpu: the experiments
# that need two or more GPUs (all-reduce, DDP scaling, peer copies); cli: `gpulab ex check` from
# the shell with the learner's warm worker
SUITES = ("core", "full", "exercises", "multi-gpu", "cli")


def default_paths(suite: str, slug: str) -> tuple[Path, Path]:
    """Where the JSON and Markdown reports of `suite` on `slug` go."""
    here = Path.cwd()
    if (here / "bench").is_dir() and (here / "gpulab").is_dir():
        base = here / "bench" / "results"
    else:
        base = data_dir() / "bench"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"{suite}-{slug}.json", base / f"{suite}-{slug}.md"


def _run_one(exp_id: str, params: dict[str, Any], inventory: Any, quick: bool) -> dict[str, Any]:
    events: list[dict[str, Any]] = []

    def emit(event: dict[str, Any]) -> None:
        if event["type"] in (ev.PROGRESS, ev.MEASUREMENT, ev.MEMORY):
            return
        if event["type"] == ev.LOG:
            sys.stderr.write(f"    | {event.get('line', '')}\n")
            return
        events.append(event)

    t0 = time.perf_counter()
    final = run_job(f"bench-{exp_id}", exp_id, params, inventory, emit, quick=quick)
    entry: dict[str, Any] = {
        "experiment": exp_id,
        "params": params,
        "status": final,
        "wall_s": time.perf_counter() - t0,
    }
    last = events[-1] if events else {}
    if final == ev.RESULT:
        entry["result"] = last.get("result", {})
    else:
        entry["failure"] = {"kind": last.get("kind", final), "message": last.get("message", "")}
    return entry


def comparisons(runs: list[dict[str, Any]], peaks: Any, inventory: Any, quick: bool) -> list[dict]:
    """The claims each run is checked against (speedups, percent of peak), measured in the same
    run."""
    out: list[dict[str, Any]] = []
    mc = [r for r in runs if r["experiment"] == "montecarlo" and r["status"] == "result"]
    if mc:
        out += montecarlo_targets(mc)
    if mc and inventory.available("torch-cuda") and not quick:
        out += montecarlo_vs_recipe(mc)
    bl = [r for r in runs if r["experiment"] == "blur" and r["status"] == "result"]
    if bl:
        out += blur_targets(bl, peaks)
    out += syllabus_comparisons(runs)

    out += claims_comparisons(runs)
    mm = [r for r in runs if r["experiment"] == "matmul" and r["status"] == "result"]
    row = None
    for r in mm:
        for m in contender_rows(r, "torch"):
            if m["dtype"] == "bf16" and m["size"] == "8192":
                row = m
    if row is not None and inventory.available("torch-cuda") and not quick:
        cmp = matmul_vs_timer(inventory)
        cmp["race_tflops"] = row["throughput"]  # the race's own row, minutes earlier: context
        out.append(cmp)
    elif mm:
        out.append({"name": MATMUL_CMP, "target": "within 5%", "status": "not run"})
    return out


def montecarlo_vs_recipe(mc_runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The torch contender against the tutorials' recipe, warm, at MC_RECIPE_SAMPLES; each with
    the experiment's own torch row at that count (when the bench ran one) as context."""
    rows = {
        r["result"]["summary"].get("samples"): contender_rows(r, "torch")
        for r in mc_runs
        if "result" in r
    }
    out = []
    for samples in MC_RECIPE_SAMPLES:
        sys.stderr.write(f"  montecarlo: torch contender vs the recipe at {samples:.0e}\n")
        try:
            cmp = torch_vs_recipe(samples)
        except Exception as exc:  # noqa: BLE001 - an OOM or a driver error: the target is not run, said why
            cmp = {
                "name": f"montecarlo: torch contender / tutorials' recipe (warm), {samples:.0e}",
                "target": ">= 0.95",
                "status": "not run",
                "reason": f"{type(exc).__name__}: {exc}",
            }
        row = rows.get(samples) or []
        if row and row[0].get("throughput"):
            cmp["experiment_row_gs"] = row[0]["throughput"]
        out.append(cmp)
    return out


def matmul_vs_timer(
    inventory: Any,
    *,
    rounds: int = 3,
    n: int = 8192,
    dtype: str = "bf16",
    quick: bool = False,
    min_run_time: float = 1.0,
) -> dict[str, Any]:
    """gpulab's torch matmul vs torch.utils.benchmark.Timer, interleaved, median of the rounds.

    A power-limited GPU runs the same product at different speeds from one moment to the next,
    so each round runs both opinions back to back in the same conditions: the matmul experiment
    exactly as a user runs it (run_job, contender torch, one size and dtype; its figure is the
    row it reports), then Timer.blocked_autorange on the same op after the same untimed warm-up.
    The ratio is median(gpulab) / median(Timer); both series go in the report.
    """
    params = {"sizes": [n], "dtypes": [dtype], "contenders": ["torch"]}
    name = (
        MATMUL_CMP
        if (n, dtype) == (8192, "bf16")
        else f"matmul: gpulab torch {dtype} n={n} vs torch.utils.benchmark.Timer"
    )
    ours: list[float] = []
    theirs: list[float] = []
    warm = 0.1 if quick else 0.5
    for i in range(max(1, rounds)):
        sys.stderr.write(f"  matmul comparison, round {i + 1} of {rounds}\n")
        entry = _run_one("matmul", params, inventory, quick)
        got = [
            m for m in contender_rows(entry, "torch") if m["dtype"] == dtype and m["size"] == str(n)
        ]
        if entry["status"] != "result" or not got or not got[0].get("throughput"):
            why = entry.get("failure", {}).get("message") or "no torch row in the result"
            return {"name": name, "target": "within 5%", "status": "not run", "reason": why}
        ours.append(float(got[0]["throughput"]))
        theirs.append(benchmark_timer_tflops(n, dtype, min_run_time=min_run_time, warm_s=warm))
    g, t = statistics.median(ours), statistics.median(theirs)
    ratio = g / t
    return {
        "name": name,
        "target": "within 5%",
        "value": ratio,
        "goal": 1.0,
        "ratio": ratio,
        "status": "pass" if abs(ratio - 1) <= 0.05 else "miss",
        "gpulab_tflops": g,
        "benchmark_timer_tflops": t,
        "rounds": [
            {"gpulab_tflops": a, "benchmark_timer_tflops": b}
            for a, b in zip(ours, theirs, strict=True)
        ],
        "method": (
            f"{rounds} interleaved rounds of [gpulab matmul experiment (run_job, torch, "
            f"n={n}, {dtype}); torch.utils.benchmark.Timer.blocked_autorange("
            f"min_run_time={min_run_time}) after {warm} s of untimed back-to-back calls]; "
            "ratio of the medians"
        ),
    }


def run_bench(
    suite: str = "core",
    only: list[str] | None = None,
    quick: bool = False,
    on_run: Any = None,
    repeat: int = 3,
    exercises: list[str] | None = None,
    soak: int = 0,
    soak_only: bool = False,
) -> dict[str, Any]:
    """The suite's report; `on_run(report)` after each run, so a killed bench keeps its rows."""
    inventory = detect()
    started = time.time()
    ctx = Context(inventory=inventory, quick=quick)
    sys.stderr.write("calibrating this device...\n")
    # cli times the shell's checks, which calibrate in their own data dir: the cached one will do
    peaks = pk.load_or_measure(ctx, remeasure=not quick and suite != "cli", quick=quick)
    cpu_peaks = peaks if peaks.cpu else pk.load_or_measure(ctx, quick=quick, cpu=True)
    runs: list[dict[str, Any]] = []
    report: dict[str, Any] = {
        "suite": suite,
        "quick": quick,
        "device": inventory.label(),
        "driver": inventory.driver_version,
        "versions": {k: v for k, v in inventory.versions.items() if v},
        "gpulab_version": __version__,
        "started_at": started,
        "peaks": peaks.to_dict(),
        "cpu_peaks": cpu_peaks.to_dict(),
        "peak_rows": pk.summary_rows(peaks),
        "runs": runs,
        "comparisons": [],
    }
    for exp in all_experiments().values():
        if only and exp.id not in only:
            continue
        if not only and (suite not in exp.bench_suites or not exp.bench_params):
            continue
        plist = QUICK_PARAMS.get(exp.id) if quick else None
        if plist is None:
            if quick and not only:
                continue  # quick mode runs only what has tiny params
            plist = exp.bench_params or ({},)
        for params in plist:
            sys.stderr.write(f"  {exp.id} {params}\n")
            runs.append(_run_one(exp.id, dict(params), inventory, quick))
            if on_run is not None:
                on_run(report)
    report["comparisons"] = comparisons(runs, peaks, inventory, quick)
    final_report_peaks(report, pk, inventory)
    report["over_ceiling"] = over_ceiling(runs)
    if suite == "cli":
        sys.stderr.write("  gpulab ex check from the shell (a warm worker)\n")
        report["cli"] = cli_check.cli_part(not peaks.cpu)
        report["comparisons"] += cli_check.comparisons(report["cli"])
    if suite in ("exercises", "full") and not only:
        sys.stderr.write("  exercises (through a warm worker)\n")

        def keep(part: dict[str, Any]) -> None:
            report["exercises"] = part
            if on_run is not None:
                on_run(report)

        report["exercises"] = ex_bench.exercises_part(
            quick, repeat=repeat, only=exercises, soak=soak, on_part=keep, soak_only=soak_only
        )
        report["comparisons"] += ex_bench.comparisons(report["exercises"], not peaks.cpu)
    report["finished_at"] = time.time()
    return report


def final_report_peaks(report: dict[str, Any], pk: Any, inventory: Any) -> None:
    """Report the ceilings the run ended with: a figure re-measured mid-run (always upwards:
    the better of two is kept) replaces the first one, which is kept as `peaks_first`."""
    for key, cpu in (("peaks", None), ("cpu_peaks", True)):
        first = report[key]
        final = pk.cached(inventory, 0, cpu=cpu if cpu else first.get("cpu"))
        if final is None or final.key != first.get("key"):
            continue
        changed = ceilings_changed(first, final.to_dict())
        if changed:
            report[f"{key}_first"] = first
            report[key] = final.to_dict()
            report[f"{key}_remeasured"] = changed
            if key == "peaks":
                report["peak_rows"] = pk.summary_rows(final)
