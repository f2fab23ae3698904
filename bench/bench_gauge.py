"""CPU cost of the gpulab UI process with the telemetry panes on (target: idle <= 2% of a core).

Runs the whole UI process headless: `GpuLabApp` at 160x48 (all four panes on screen, the
memory gauge and the GPU info pane among them) with its runner (a FakeRunner by default, the
real worker process with --runner real) and the 2 Hz sampler, and measures
`time.process_time()` (every thread of this process: the event loop, the sampler thread's NVML
calls, the runner client) against wall time over each phase. The worker is another process:
its CPU is not the UI's and is not counted.

  idle    nothing happens: frames arrive, the panes compare and mostly skip repaints
  active  a job runs (held open by the fake runner; with the real runner, a long Monte Carlo
          that is cancelled at the end): memory changes every frame and worker readings arrive
          at 4/s, so the gauge repaints on every update (the worst case the gauge meets)

    python bench/bench_gauge.py                        # fake NVML, fake runner (CI, laptops)
    python bench/bench_gauge.py --runner real --jitter # the real worker process
    python bench/bench_gauge.py --real --phases idle   # the machine's NVML
    python bench/bench_gauge.py --json bench/results/gauge-cpu.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpulab.app.panes.gpu_info as info  # noqa: E402
from gpulab.app.app import GpuLabApp  # noqa: E402
from gpulab.app.panes.memory_gauge import MemoryGauge  # noqa: E402
from gpulab.telemetry.sampler import Sampler, TelemetryReader  # noqa: E402
from gpulab.testing.fake_nvml import GiB, MiB, fake_sampler, worker_inventory  # noqa: E402
from gpulab.testing.fake_runner import FakeRunner  # noqa: E402

TARGET_IDLE = 0.02  # of one core
SIZE = (160, 48)


class BenchApp(GpuLabApp):
    """The lab as `gpulab` runs it, plus a tap on the sampler for the NVML read times."""

    def __init__(self, sampler: Sampler, **kw: Any) -> None:
        super().__init__(sampler=sampler, watch_terminal=False, **kw)
        self.read_s: list[float] = []
        self._off: Any = None

    def on_mount(self) -> None:
        super().on_mount()
        self._off = self.sampler.subscribe(lambda f: self.read_s.append(f.read_s))

    async def on_unmount(self) -> None:
        if self._off is not None:
            self._off()
        await super().on_unmount()


async def _phase(
    app: BenchApp, pilot: Any, name: str, seconds: float, fake: Any, jitter: bool
) -> dict[str, Any]:
    pid = int(app.handshake["pid"])
    gauge = app.query_one(MemoryGauge)
    frames0, repaints0, n_read = app.sampler.frames, gauge.repaints, len(app.read_s)
    if name == "active":
        await _start_job(app, pilot)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    end = wall0 + seconds
    step = 0
    while time.perf_counter() < end:
        if name == "active":
            step += 1
            held = (step % 8 + 1) * 512 * MiB
            if fake is not None:
                fake.set_process_memory(0, pid, held + GiB)
            gauge.add_reading(
                {
                    "type": "memory",
                    "pid": pid,
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
        await _end_job(app, pilot)
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


async def _start_job(app: BenchApp, pilot: Any) -> None:
    if isinstance(app.runner, FakeRunner):
        app.runner.hold = True  # the fake job stays open until released
    else:
        app.panel.form.set_values({"samples": "1e12"})  # far longer than a phase: cancelled
        await pilot.pause()
    await pilot.press("r")
    while not (app.panel.running and app.panel.job is not None):
        await pilot.pause(0.05)


async def _end_job(app: BenchApp, pilot: Any) -> None:
    if isinstance(app.runner, FakeRunner):
        app.runner.release()
    else:
        await app.panel.cancel_run()
    deadline = time.monotonic() + 60
    while app.panel.running and time.monotonic() < deadline:
        await pilot.pause(0.05)


async def run(
    real: bool,
    seconds: float,
    phases: list[str],
    interval: float,
    jitter: bool = False,
    runner: str = "fake",
) -> dict[str, Any]:
    if real:
        sampler, fake = Sampler(TelemetryReader(), interval=interval), None
    else:
        sampler, fake = fake_sampler("full", interval=interval)
    kw: dict[str, Any] = {}
    if runner == "fake":
        inventory = worker_inventory(fake) if fake is not None else None
        kw["runner_factory"] = lambda **rk: FakeRunner(inventory=inventory, pid=4242, **rk)
    app = BenchApp(sampler, **kw)
    results = []
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 180
        while app.handshake is None:  # the worker is up (the real one imports torch first)
            assert time.monotonic() < deadline, "the runner never became ready"
            await pilot.pause(0.1)
        pid = int(app.handshake["pid"])
        if fake is not None and pid != 4242:  # the fake NVML lists the real worker instead
            fake.set_process_memory(0, 4242, 0)
            fake.set_process_memory(0, pid, GiB)
        frames0 = sampler.frames
        while sampler.frames < frames0 + 3:  # warm-up: first frames, first layout
            await pilot.pause(0.1)
        await pilot.pause(2.0)  # let the worker's own start-up (its spare) settle
        for name in phases:
            results.append(await _phase(app, pilot, name, seconds, fake, jitter))
        await pilot.press("q")
    stopped = not sampler.running
    frame = sampler.latest()
    gpus = [g.name for g in frame.inventory.gpus] if frame else []
    return {
        "benchmark": "gauge-cpu",
        "process": f"the gpulab UI process: GpuLabApp at {SIZE[0]}x{SIZE[1]} (all four panes "
        f"on screen), {'the real worker process' if runner == 'real' else 'a FakeRunner'}",
        "runner": runner,
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
        "cpu_count": os.cpu_count(),
        "load_average_1m_after": round(os.getloadavg()[0], 2),  # other work on the machine
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--real", action="store_true", help="use this machine's NVML")
    p.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    p.add_argument("--phases", default="idle,active", help="comma-separated: idle, active")
    p.add_argument("--interval", type=float, default=0.5, help="sampler period (default 2 Hz)")
    p.add_argument("--jitter", action="store_true", help="fake: vary power/temperature like a GPU")
    p.add_argument("--runner", choices=("fake", "real"), default="fake", help="the app's runner")
    p.add_argument("--live-period", type=float, help="override the info pane's live repaint cap")
    p.add_argument("--json", dest="json_path", help="write the result here")
    args = p.parse_args()
    if args.live_period is not None:
        info.LIVE_PERIOD_S = args.live_period
    out = asyncio.run(
        run(
            args.real,
            args.seconds,
            args.phases.split(","),
            args.interval,
            args.jitter,
            args.runner,
        )
    )
    out["live_repaint_period_s"] = info.LIVE_PERIOD_S  # what the code used, override or not
    text = json.dumps(out, indent=2)
    print(text)
    if args.json_path:
        Path(args.json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_path).write_text(text + "\n")
    return 0 if out["idle_within_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
