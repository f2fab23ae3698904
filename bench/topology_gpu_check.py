"""On a multi-GPU host: the topology view and the live link figures on real NVML, against NVML's
own tool (nvidia-smi) over the same window and against the bytes a known workload moved.

    python3 bench/topology_gpu_check.py OUTDIR

Two workloads run in a child process: an NCCL all-reduce loop on the first two GPUs (NVLink
traffic) and pinned host-to-device copies on GPU 0 (PCIe traffic). During each, our readers
(`gpulab.telemetry.topology.NvlinkRates`, the sampler's PCIe figure) and `nvidia-smi` read the
same window. During the all-reduce the lab itself runs at 120x40 under Textual's Pilot and its
GPU pane is screenshotted, whole screen and maximized (`m`).
Writes OUTDIR/topology-gpu.json, OUTDIR/lab-120x40.svg, OUTDIR/gpu-pane-maximized-120x40.svg.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulab.telemetry.nvml import NvmlSession  # noqa: E402
from gpulab.telemetry.snapshot import read_snapshot  # noqa: E402
from gpulab.telemetry.topology import NvlinkRates, read_topology  # noqa: E402
from gpulab.telemetry.values import NA  # noqa: E402

MiB = 1 << 20
NVLINK_CHILD = r"""
import os, sys, time, json, torch, torch.distributed as dist, torch.multiprocessing as mp
def rank(r, dur, port):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(r)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=r, world_size=2,
                            device_id=torch.device("cuda", r))
    x = torch.ones(64 * 2**20, device="cuda")  # 256 MiB
    for _ in range(5): dist.all_reduce(x); x.fill_(1)
    torch.cuda.synchronize(); dist.barrier()
    t0, calls = time.perf_counter(), 0
    if r == 0: print("go", time.time(), flush=True)
    while True:
        for _ in range(10): dist.all_reduce(x)
        calls += 10
        torch.cuda.synchronize()
        x.fill_(1)
        stop = torch.tensor([float(time.perf_counter() - t0 > dur)], device="cuda")
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item(): break
    t = time.perf_counter() - t0
    if r == 0: print(json.dumps({"calls": calls, "seconds": t, "bytes_a_call": x.numel() * 4}), flush=True)
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.start_processes(rank, args=(float(sys.argv[1]), int(sys.argv[2])), nprocs=2, start_method="spawn")
"""
PCIE_CHILD = r"""
import sys, time, json, torch
dur = float(sys.argv[1])
h = torch.ones(256 * 2**20, dtype=torch.uint8).pin_memory()
d = torch.empty_like(h, device="cuda:0")
for _ in range(3): d.copy_(h)
torch.cuda.synchronize()
print("go", time.time(), flush=True)
t0, n = time.perf_counter(), 0
while time.perf_counter() - t0 < dur:
    for _ in range(8): d.copy_(h, non_blocking=True)
    torch.cuda.synchronize(); n += 8
t = time.perf_counter() - t0
print(json.dumps({"calls": n, "seconds": t, "bytes_a_call": h.numel()}), flush=True)
"""


def smi_nvlink(gpu: int) -> tuple[float, int, int]:
    """(time mid-call, KiB sent, KiB received) summed over GPU `gpu`'s links, from nvidia-smi."""
    t0 = time.time()
    out = subprocess.run(
        ["nvidia-smi", "nvlink", "-gt", "d", "-i", str(gpu)], capture_output=True, text=True
    ).stdout
    t = (t0 + time.time()) / 2
    tx = sum(int(v) for v in re.findall(r"Data Tx:\s*(\d+)\s*KiB", out))
    rx = sum(int(v) for v in re.findall(r"Data Rx:\s*(\d+)\s*KiB", out))
    return t, tx, rx


def child(code: str, dur: float, *args: str) -> tuple[subprocess.Popen, float]:
    # a file, not -c: spawned ranks import the script by its path to find their function
    script = Path(tempfile.mkdtemp()) / "load.py"
    script.write_text(code)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(dur), *args], stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline().split()  # type: ignore[union-attr]
    assert line and line[0] == "go", line
    return proc, float(line[1])


def finish(proc: subprocess.Popen) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=120)
    done = json.loads(out.strip().splitlines()[-1])
    done["bytes_a_s"] = done["calls"] * done["bytes_a_call"] / done["seconds"]
    return done


def figure(v: Any) -> float | None:
    return None if isinstance(v, NA) else float(v)


def nvlink_window(session: NvmlSession, gpus: int, window_s: float) -> dict[str, Any]:
    rates = NvlinkRates()
    first = {}
    for i in range(gpus):
        rates.read(session, i, time.time())
        first[i] = smi_nvlink(i)
    time.sleep(window_s)
    rows = {}
    for i in range(gpus):
        ours = rates.read(session, i, time.time())
        t, tx, rx = smi_nvlink(i)
        t0, tx0, rx0 = first[i]
        smi = ((tx - tx0) * 1024 / (t - t0), (rx - rx0) * 1024 / (t - t0))
        rows[i] = {
            "ours_tx_gbs": round((figure(ours[0]) or 0) / 1e9, 2),
            "ours_rx_gbs": round((figure(ours[1]) or 0) / 1e9, 2),
            "smi_tx_gbs": round(smi[0] / 1e9, 2),
            "smi_rx_gbs": round(smi[1] / 1e9, 2),
            "tx_ours_over_smi": round((figure(ours[0]) or 0) / smi[0], 4) if smi[0] else None,
            "rx_ours_over_smi": round((figure(ours[1]) or 0) / smi[1], 4) if smi[1] else None,
        }
    return rows


async def screenshots(out: Path, notes: dict[str, Any]) -> None:
    from gpulab.app.app import GpuLabApp
    from gpulab.app.panes.gpu_info import GpuInfoPane
    from gpulab.telemetry.sampler import Sampler, TelemetryReader

    sampler = Sampler(TelemetryReader(), interval=0.5)
    app = GpuLabApp(sampler=sampler)

    async def settle(pilot: Any, ready: Any, limit: float = 90.0) -> None:
        end = time.monotonic() + limit
        while not ready():
            assert time.monotonic() < end, "the lab did not get there in time"
            await pilot.pause(0.1)

    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.handshake is not None and bool(app.query(GpuInfoPane)))
        pane = app.query_one(GpuInfoPane)
        target = sampler.frames + 3
        await settle(pilot, lambda: sampler.frames >= target)
        pane._live_at = 0.0  # repaint now, not at the pane's next period
        await pilot.pause(0.3)
        app.save_screenshot(str(out / "lab-120x40.svg"))
        app.query_one("#gpu-list").focus()
        await pilot.press("m")
        await settle(pilot, lambda: app.screen.maximized is pane)
        target = sampler.frames + 2
        await settle(pilot, lambda: sampler.frames >= target)
        pane._live_at = 0.0
        await pilot.pause(0.3)
        app.save_screenshot(str(out / "gpu-pane-maximized-120x40.svg"))
        frame = sampler.latest()
        notes["pane_frame"] = [
            {
                "gpu": s.nvml_index,
                "nvlink_tx_gbs": (figure(s.nvlink_tx) or 0) / 1e9,
                "nvlink_rx_gbs": (figure(s.nvlink_rx) or 0) / 1e9,
            }
            for s in frame.snapshots
        ]
        notes["pane_text"] = "\n".join(
            str(w.render()) for w in pane.query("#gpu-live, #gpu-details")
        )


def main(out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    session = NvmlSession()
    assert session.open(), session.error
    gpus = session.nvml.nvmlDeviceGetCount()
    topo = read_topology(session, gpus)
    notes: dict[str, Any] = {
        "gpus": gpus,
        "topology": topo.to_dict(),
        "summary": topo.summary(),
        "nvidia_smi_topo": subprocess.run(
            ["nvidia-smi", "topo", "-m"], capture_output=True, text=True
        ).stdout,
    }
    # NVLink: an all-reduce loop on GPUs 0 and 1
    proc, _ = child(NVLINK_CHILD, 30.0, "29517")
    time.sleep(1.0)
    notes["nvlink"] = nvlink_window(session, gpus, 5.0)
    try:
        asyncio.run(screenshots(out, notes))
    except Exception as exc:  # noqa: BLE001 - the figures above still count; say what failed
        notes["screenshot_error"] = f"{type(exc).__name__}: {exc}"
    notes["nvlink_again"] = nvlink_window(session, gpus, 5.0)
    load = finish(proc)
    notes["nvlink_load"] = load
    # the ring on 2 ranks: each GPU sends (and receives) 2 (n-1)/n = 1 x the buffer a call
    notes["nvlink_expected_gbs_each_way"] = round(load["bytes_a_s"] / 1e9, 2)
    # PCIe: pinned host-to-device copies on GPU 0; NVML's counter is a 20 ms sample
    proc, _ = child(PCIE_CHILD, 8.0)
    time.sleep(1.0)
    samples = []
    for _ in range(10):
        s = read_snapshot(session, 0, None, time.time(), pcie_throughput=True)
        samples.append((figure(s.pcie_rx) or 0) / 1e9)  # host to device is received by the GPU
        time.sleep(0.3)
    smi = subprocess.run(
        ["nvidia-smi", "dmon", "-i", "0", "-s", "t", "-c", "3"], capture_output=True, text=True
    ).stdout
    load = finish(proc)
    notes["pcie"] = {
        "ours_rx_gbs_samples": [round(v, 2) for v in samples],
        "ours_rx_gbs_median": round(sorted(samples)[len(samples) // 2], 2),
        "copy_gbs": round(load["bytes_a_s"] / 1e9, 2),
        "nvidia_smi_dmon": smi,
    }
    (out / "topology-gpu.json").write_text(json.dumps(notes, indent=2, default=str) + "\n")
    return notes


if __name__ == "__main__":
    r = main(Path(sys.argv[1] if len(sys.argv) > 1 else "out"))
    print(
        json.dumps(
            {
                k: r.get(k)
                for k in (
                    "summary",
                    "nvlink",
                    "nvlink_again",
                    "nvlink_expected_gbs_each_way",
                    "pcie",
                    "pane_frame",
                    "screenshot_error",
                )
            },
            indent=1,
            default=str,
        )
    )
