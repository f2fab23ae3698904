"""App benchmarks: time to first frame vs a bare Textual app, and event-loop lag during a run.

    python bench/bench_app.py [--runs 5] [--samples 60000000] [--json bench/results/app-cpu.json]

1. First frame: each app starts in a fresh interpreter (imports included), headless, and reports
   the time from interpreter start to the end of its first screen refresh. GpuLabApp starts its
   real runner on mount (the worker imports torch in the background); the bare app is
   `textual.app.App` with one Static. Runs alternate, so both see the same machine load; the
   ratio of medians is the figure (target <= 2).
2. Lag: GpuLabApp (headless, real runner) runs Monte Carlo sized to take ~10 s while a probe
   task on the app's event loop sleeps 10 ms at a time and records how late it wakes up.
   p99 of that lateness is the figure (target <= 50 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

FIRST_FRAME = r"""
import time
t0 = time.perf_counter()
import sys
kind = sys.argv[1]
if kind == "gpulab":
    from gpulab.app import GpuLabApp as AppClass
    kw = {"watch_terminal": False}
else:
    from textual.app import App as Base
    from textual.widgets import Static

    class AppClass(Base):
        def compose(self):
            yield Static("hello")
    kw = {}

class Timed(AppClass):
    def on_mount(self):
        if hasattr(super(), "on_mount"):
            super().on_mount()
        self.call_after_refresh(self._painted)

    def _painted(self):
        print(f"FIRST_FRAME {time.perf_counter() - t0:.6f}", flush=True)
        self.exit()

Timed(**kw).run(headless=True, size=(160, 48))
"""


def first_frame(kind: str) -> float:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME, kind],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    for line in out.stdout.splitlines():
        if line.startswith("FIRST_FRAME "):
            return float(line.split()[1])
    raise RuntimeError(f"{kind}: no first frame\n{out.stdout}\n{out.stderr}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def lag_during_run(samples: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from gpulab.app import GpuLabApp

    app = GpuLabApp(watch_terminal=False)
    lags: list[float] = []
    events = {"n": 0}
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + 120
        while app.handshake is None:
            assert time.monotonic() < deadline, "worker never became ready"
            await pilot.pause(0.05)
        tap = app.runner.on_event

        def counting(event: dict[str, Any]) -> None:
            events["n"] += 1
            tap(event)

        app.runner.on_event = counting
        app.panel.form.set_values({"samples": str(samples)})
        await pilot.pause()
        stop = asyncio.Event()

        async def probe() -> None:
            interval = 0.010
            while not stop.is_set():
                start = time.perf_counter()
                await asyncio.sleep(interval)
                lags.append(time.perf_counter() - start - interval)

        probe_task = asyncio.create_task(probe())
        started = time.perf_counter()
        await pilot.press("r")
        while app.panel.live is None or not app.panel.live.finished:
            await asyncio.sleep(0.05)
        took = time.perf_counter() - started
        stop.set()
        await probe_task
        state = app.panel.live
        rows = len(state.rows)
        status = state.status
        await pilot.press("q")
    ms = [x * 1e3 for x in lags]
    return {
        "experiment": "montecarlo",
        "samples": samples,
        "run_s": round(took, 2),
        "status": status,
        "rows": rows,
        "events_seen": events["n"],
        "probe_interval_ms": 10,
        "probes": len(ms),
        "lag_ms_p50": round(percentile(ms, 50), 2),
        "lag_ms_p99": round(percentile(ms, 99), 2),
        "lag_ms_max": round(max(ms), 2),
        "target_p99_ms": 50,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=60_000_000)
    ap.add_argument("--json", dest="json_path", default="")
    args = ap.parse_args()

    times: dict[str, list[float]] = {"bare": [], "gpulab": []}
    first_frame("bare")  # warm the OS file cache for both, untimed
    first_frame("gpulab")
    for _ in range(args.runs):
        for kind in ("bare", "gpulab"):
            times[kind].append(first_frame(kind))
    bare = statistics.median(times["bare"])
    lab = statistics.median(times["gpulab"])
    startup = {
        "runs": args.runs,
        "bare_s": [round(t, 4) for t in times["bare"]],
        "gpulab_s": [round(t, 4) for t in times["gpulab"]],
        "bare_median_s": round(bare, 4),
        "gpulab_median_s": round(lab, 4),
        "ratio": round(lab / bare, 2),
        "target_ratio": 2.0,
        "how": "fresh interpreter per start, headless 160x48, start of interpreter to the end "
        "of the first refresh; alternating runs",
    }
    print(
        f"first frame: bare {bare * 1e3:.0f} ms, gpulab {lab * 1e3:.0f} ms, "
        f"ratio {lab / bare:.2f} (target <= 2)"
    )
    lag = asyncio.run(lag_during_run(args.samples))
    print(
        f"event-loop lag during a {lag['run_s']} s run: p50 {lag['lag_ms_p50']} ms, "
        f"p99 {lag['lag_ms_p99']} ms, max {lag['lag_ms_max']} ms (target p99 <= 50)"
    )
    import textual

    report = {
        "benchmark": "app",
        "device": "CPU (no GPU): " + (platform.processor() or platform.machine()),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "textual": textual.__version__,
        "startup": startup,
        "lag": lag,
        "passed": startup["ratio"] <= 2.0 and lag["lag_ms_p99"] <= 50 and lag["status"] == "result",
        "when": time.strftime("%Y-%m-%d"),
    }
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
