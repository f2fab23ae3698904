"""CPU cost of the telemetry panes in the UI process (target: idle <= 2% of one core).

Runs a headless Textual app holding GpuInfoPane and MemoryGauge on the default 2 Hz sampler,
and measures `time.process_time()` (every thread of the process: the event loop and the
sampler thread's NVML calls) against wall time over each phase:

  idle    nothing changes on the GPU: frames arrive, the panes compare and mostly skip repaints
  active  a job "runs": memory changes every frame and worker readings arrive at 4/s, so the
          gauge repaints on every update (the worst case the gauge meets)

    python bench/bench_gauge.py                      # fake NVML (CI, laptops)
    python bench/bench_gauge.py --real --phases idle # the machine's NVML
    python bench/bench_gauge.py --json bench/results/gauge-cpu.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.app import App, ComposeResult  # noqa: E402
from textual.containers import Horizontal  # noqa: E402

from gpulab.app.panes.gpu_info import GpuInfoPane  # noqa: E402
from gpulab.app.panes.memory_gauge import MemoryGauge  # noqa: E402
from gpulab.telemetry.fake import GiB, MiB, fake_sampler, worker_inventory  # noqa: E402
from gpulab.telemetry.sampler import Sampler, TelemetryReader  # noqa: E402

TARGET_IDLE = 0.02  # of one core


class GaugeApp(App):
    CSS = "Horizontal > * { width: 1fr; border: round $accent; }"

    def __init__(self, sampler: Sampler) -> None:
        super().__init__()
        self.sampler = sampler
        self.read_s: list[float] = []

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield GpuInfoPane(sampler=self.sampler, id="gpu-info")
            yield MemoryGauge(sampler=self.sampler, id="memory-gauge")

    def on_mount(self) -> None:
        self._off = self.sampler.subscribe(lambda f: self.read_s.append(f.read_s))

    def on_unmount(self) -> None:
        self._off()


async def _phase(
    app: GaugeApp, name: str, seconds: float, fake: Any, jitter: bool
) -> dict[str, Any]:
    gauge = app.query_one(MemoryGauge)
    frames0, repaints0, n_read = app.sampler.frames, gauge.repaints, len(app.read_s)
    if name == "active":
        gauge.job_started()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    end = wall0 + seconds
    step = 0
    while time.perf_counter() < end:
        if name == "active":
            step += 1
            held = (step % 8 + 1) * 512 * MiB
            if fake is not None:
                fake.set_process_memory(0, 4242, held + GiB)
            gauge.add_reading(
                {
                    "type": "memory",
                    "pid": 4242,
                    "reading": {"torch_allocated": held, "torch_reserved": held},
                }
            )
            await asyncio.sleep(0.25)
        else:
            if jitter and fake is not None:  # a real idle GPU's power and temperature wobble
                step += 1
                fake.gpus[0].power_mw = 72_000 + 1_000 * (step % 5)
                fake.gpus[0].temp = 34 + step % 2
            await asyncio.sleep(0.5)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if name == "active":
        gauge.job_finished()
    reads = app.read_s[n_read:]
    return {
        "phase": name,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 4),
        "cpu_fraction_of_core": round(cpu / wall, 5),
        "frames": app.sampler.frames - frames0,
        "frames_per_s": round((app.sampler.frames - frames0) / wall, 2),
        "gauge_repaints": gauge.repaints - repaints0,
        "nvml_read_ms_median": round(statistics.median(reads) * 1e3, 3) if reads else None,
    }


async def run(
    real: bool, seconds: float, phases: list[str], interval: float, jitter: bool = False
) -> dict[str, Any]:
    if real:
        sampler, fake = Sampler(TelemetryReader(), interval=interval), None
    else:
        sampler, fake = fake_sampler("full", interval=interval)
    app = GaugeApp(sampler)
    results = []
    async with app.run_test(size=(110, 32)) as pilot:
        if fake is not None:
            app.query_one(GpuInfoPane).set_worker_info(
                {"pid": 4242, "inventory": worker_inventory(fake)}
            )
        app.query_one(MemoryGauge).set_worker_pid(4242)
        while sampler.frames < 3:  # warm-up: first frames, first layout
            await pilot.pause(0.1)
        for name in phases:
            results.append(await _phase(app, name, seconds, fake, jitter))
    stopped = not sampler.running
    frame = sampler.latest()
    gpus = [g.name for g in frame.inventory.gpus] if frame else []
    return {
        "benchmark": "gauge-cpu",
        "nvml": "real"
        if real
        else "fake (full)" + (", power/temperature wobbling" if jitter else ""),
        "gpus": [str(g) for g in gpus],
        "nvml_available": bool(frame and frame.inventory.available),
        "interval_s": interval,
        "target_idle_fraction_of_core": TARGET_IDLE,
        "phases": results,
        "idle_within_target": all(
            r["cpu_fraction_of_core"] <= TARGET_IDLE for r in results if r["phase"] == "idle"
        ),
        "sampler_stopped_with_app": stopped,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--real", action="store_true", help="use this machine's NVML")
    p.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    p.add_argument("--phases", default="idle,active", help="comma-separated: idle, active")
    p.add_argument("--interval", type=float, default=0.5, help="sampler period (default 2 Hz)")
    p.add_argument("--jitter", action="store_true", help="fake: vary power/temperature like a GPU")
    p.add_argument("--live-period", type=float, help="override the info pane's live repaint cap")
    p.add_argument("--json", dest="json_path", help="write the result here")
    args = p.parse_args()
    if args.live_period is not None:
        import gpulab.app.panes.gpu_info as info

        info.LIVE_PERIOD_S = args.live_period
    out = asyncio.run(
        run(args.real, args.seconds, args.phases.split(","), args.interval, args.jitter)
    )
    out["live_repaint_period_s"] = args.live_period if args.live_period is not None else 1.0
    text = json.dumps(out, indent=2)
    print(text)
    if args.json_path:
        Path(args.json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_path).write_text(text + "\n")
    return 0 if out["idle_within_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
