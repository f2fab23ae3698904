"""Benchmark the syllabus experiments at their bench sizes; write JSON and Markdown.

    python3 bench/bench_syllabus.py [--only ID ...] [--json PATH] [--markdown PATH]

Each experiment runs through runner.inline.run_job (as the worker runs it), at every entry of
its bench_params. The JSON holds the device, driver and versions, every result, and the two
targets of issue 7 judged from figures measured in the same run:
  reduction: our kernel >= 80% of torch.sum's GB/s;
  bandwidth: PyTorch's pinned copy >= 90% of a plain cudaMemcpyAsync's GB/s (1 GiB, each way).
`gpulab bench --suite full` covers the same experiments; this script exists so the syllabus
experiments can be benchmarked on their own.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.core.devices import detect  # noqa: E402
from gpulab.experiments import registry  # noqa: E402
from gpulab.runner.inline import run_job  # noqa: E402

SYLLABUS = (
    "vector-add",
    "reduction",
    "bandwidth",
    "create-on-device",
    "round-trips",
    "batching",
    "in-place",
    "dtypes",
    "tensor-core-alignment",
    "memory-layout",
    "kernel-fusion",
    "mixed-precision",
    "profiler",
    "memory",
)


def targets(runs: list[dict]) -> dict:
    out: dict = {}
    for run in runs:
        res = run.get("result") or {}
        s = res.get("summary", {})
        if run["experiment"] == "reduction" and "ours_vs_torch_sum" in s:
            r = s["ours_vs_torch_sum"]
            out["reduction_ours_vs_torch_sum"] = {"ratio": r, "target": 0.8, "met": r >= 0.8}
        if run["experiment"] == "bandwidth":
            for d in ("h2d", "d2h"):
                key = f"{d}_pinned_vs_runtime"
                if key in s:
                    r = s[key]
                    out[f"bandwidth_{key}"] = {"ratio": r, "target": 0.9, "met": r >= 0.9}
    return out


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return ""
    return f"{v:.3g} {unit}"


def markdown(doc: dict) -> str:
    lines = [
        f"# gpulab full-suite bench (syllabus experiments): {doc['device']}",
        "",
        f"driver {doc['driver']}; " + ", ".join(f"{k} {v}" for k, v in doc["versions"].items()),
        "",
        "| experiment | params | contender | size | dtype | median | throughput | % of peak |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in doc["runs"]:
        res = run.get("result")
        params = ", ".join(f"{k}={v}" for k, v in run["params"].items())
        if not res:
            lines.append(
                f"| {run['experiment']} | {params} | {run['final']}: "
                f"{run.get('message', '')} | | | | | |"
            )
            continue
        for m in res["measurements"]:
            pct = m.get("percent_of_peak")
            pct_text = "" if pct is None else f"{pct:.0f}% {m.get('peak_name', '')}"
            lines.append(
                f"| {run['experiment']} | {params} | {m['contender']} | {m['size']} | "
                f"{m['dtype']} | {m['time_median_s'] * 1e3:.4g} ms | "
                f"{fmt(m.get('throughput'), m.get('unit', ''))} | "
                f"{pct_text} |"
            )
        failed = [v for v in res["verdicts"] if not v["passed"]]
        if failed:
            lines.append(
                f"| {run['experiment']} | | FAILED verification: "
                f"{', '.join(v['contender'] for v in failed)} | | | | | |"
            )
    lines += ["", "## Targets (same run)", ""]
    for name, t in doc["targets"].items():
        lines.append(
            f"- {name}: {t['ratio'] * 100:.1f}% (target {t['target'] * 100:.0f}%): "
            f"{'met' if t['met'] else 'MISSED'}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--markdown", dest="md_path")
    ap.add_argument(
        "--targets-from", help="only judge the targets in a `gpulab bench` JSON and print them"
    )
    args = ap.parse_args(argv)
    if args.targets_from:
        found = targets(json.loads(Path(args.targets_from).read_text()).get("runs", []))
        print(json.dumps(found, indent=1))
        return 0 if found and all(t["met"] for t in found.values()) else 1
    inv = detect()
    ids = args.only or list(SYLLABUS)
    doc = {
        "suite": "full (syllabus experiments)",
        "device": inv.label(),
        "driver": inv.driver_version,
        "versions": {k: v for k, v in inv.versions.items() if v},
        "started_at": time.time(),
        "runs": [],
        "targets": {},
    }
    for exp_id in ids:
        exp = registry.get(exp_id)
        for bp in exp.bench_params:
            events: list[dict] = []
            t0 = time.time()
            final = run_job("bench", exp_id, dict(bp), inv, events.append)
            run = {"experiment": exp_id, "params": bp, "final": final, "wall_s": time.time() - t0}
            last = events[-1] if events else {}
            if final == "result":
                run["result"] = last["result"]
            else:
                run["message"] = last.get("message", "")
                run["traceback"] = last.get("traceback", "")
            doc["runs"].append(run)
            doc["targets"] = targets(doc["runs"])
            print(
                f"{exp_id} {bp}: {final} in {run['wall_s']:.1f} s {run.get('message', '')}",
                flush=True,
            )
            if args.json_path:  # after every run, so a killed bench keeps what it measured
                Path(args.json_path).write_text(json.dumps(doc, indent=1))
    text = markdown(doc)
    if args.md_path:
        Path(args.md_path).write_text(text)
    print(text)
    return 0 if all(r["final"] == "result" for r in doc["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
