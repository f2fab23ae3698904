"""`gpulab info`: backends, devices and the GPU's figures; the plain-text and JSON forms of the
NVML inventory and one snapshot."""

from __future__ import annotations

import argparse
import functools
import json
import time
from typing import TYPE_CHECKING, Any

from gpulab import __version__
from gpulab.core.doc_tags import tagged
from gpulab.telemetry.values import NA, card_memory, fmt, gib, nbytes

if TYPE_CHECKING:
    from gpulab.telemetry.inventory import SystemInventory
    from gpulab.telemetry.snapshot import GpuSnapshot


NVLINK_GAP_S = 0.25  # between the two readings that give the NVLink traffic


def add_parser(sub: Any) -> None:
    """Register `gpulab info` on the subcommands."""
    info = sub.add_parser("info", help="backends, devices and the GPU's figures")
    info.add_argument("--json", action="store_true", help="print JSON")


def main(args: argparse.Namespace) -> int:
    """Print backends, devices and NVML's figures (text or JSON)."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.core.devices import detect
    from gpulab.telemetry.sampler import TelemetryReader

    inv = detect()
    reader = TelemetryReader()
    try:
        frame = reader.read()
        if frame.inventory.topology.nvlink:
            # NVLink's counters give a rate between two readings
            time.sleep(NVLINK_GAP_S)
            frame = reader.read()
    finally:
        reader.close()
    nvml = frame.inventory.with_worker(inv.to_dict())
    if args.json:
        data = inv.to_dict()
        data["nvml"] = info_json(nvml, frame.snapshots)
        print(json.dumps(tagged("info", data), indent=2))
        return 0
    print(f"gpulab {__version__}")
    print(f"GPU: {inv.label()}")
    card_totals = {g.cuda_index: g.memory_total for g in nvml.gpus}
    for d in inv.devices:
        total = card_totals.get(d.index)
        memory = (
            card_memory(total, d.memory_total)
            if isinstance(total, int)
            else f"{gib(d.memory_total)} (CUDA's figure: NVML cannot read the card's)"
        )
        print(
            f"  cuda:{d.index}  {d.name}  cc {d.compute_capability}  {d.multiprocessors} SMs  "
            f"{memory}"
        )
    print("Backends:")
    for b in inv.backends.values():
        state = f"yes  {b.version}" if b.available else f"no   {b.reason}"
        print(f"  {b.name:<11} {state}")
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in inv.versions.items() if v))
    for line in info_lines(nvml, frame.snapshots):
        print(line)
    return 0


def info_json(inv: SystemInventory, snaps: list[GpuSnapshot]) -> dict[str, Any]:
    """The inventory and snapshots as JSON-ready data."""
    return {"inventory": inv.to_dict(), "snapshots": [s.to_dict() for s in snaps]}


def _mhz(v: int) -> str:
    return f"{v} MHz"


def info_lines(inv: SystemInventory, snaps: list[GpuSnapshot]) -> list[str]:
    """The inventory and snapshots as text lines."""
    if not inv.available:
        return [f"NVML: {inv.reason}"]
    lines = [
        f"NVML: driver {fmt(inv.driver_version)}, CUDA {fmt(inv.cuda_driver_version)} (driver), "
        f"NVML {fmt(inv.nvml_version)}, nvidia-ml-py {inv.binding_version or 'N/A'}"
    ]
    if not inv.gpus:
        lines.append(f"  {inv.reason}")
    by_index = {s.nvml_index: s for s in snaps}
    for g in inv.gpus:
        s = by_index.get(g.nvml_index)
        rows: list[tuple[str, str]] = [
            ("name", fmt(g.name)),
            ("uuid", fmt(g.uuid)),
            ("cuda index", fmt(g.cuda_index)),
            ("compute capability", f"{fmt(g.compute_capability)} ({fmt(g.architecture)})"),
            ("SMs", fmt(g.sm_count)),
            ("L2 cache", fmt(g.l2_cache, nbytes)),
            (
                "memory total",
                fmt(g.memory_total, functools.partial(card_memory, cuda_total=g.cuda_memory_total)),
            ),
            (
                "max clocks",
                f"SM {fmt(g.max_sm_clock_mhz, _mhz)}, mem {fmt(g.max_mem_clock_mhz, _mhz)}",
            ),
            ("bus width", fmt(g.bus_width_bits, "{} bit".format)),
            (
                "memory bandwidth",
                fmt(g.memory_bandwidth, lambda b: f"{b / 1e9:.0f} GB/s (2 x clock x width / 8)"),
            ),
            (
                "PCIe max",
                f"gen {fmt(g.pcie_max_gen)} x{fmt(g.pcie_max_width)}, "
                f"{fmt(g.pcie_bandwidth, lambda b: f'{b / 1e9:.1f} GB/s each way')}",
            ),
            ("power limit", fmt(g.power_limit_w, "{:.0f} W".format)),
            ("MIG", fmt(g.mig_mode)),
        ]
        if s is not None:
            rows += _snapshot_rows(s)
        lines.append(f"GPU {g.nvml_index} (NVML index):")
        lines += [f"  {k:<19} {v}" for k, v in rows]
    lines += links_lines(inv)
    if inv.worker_versions:
        lines.append("Worker: " + ", ".join(f"{k} {v}" for k, v in inv.worker_versions.items()))
    return lines


def links_lines(inv: SystemInventory) -> list[str]:
    """How the GPUs are linked (gpulab.telemetry.topology), as `nvidia-smi topo -m` shows it."""
    topo = inv.topology
    if not topo.gpus:
        return []
    lines = [f"Links: {topo.summary()}"]
    if len(topo.gpus) > 1:
        ids = [g.nvml_index for g in topo.gpus]
        lines.append("  " + " " * 6 + "".join(f"{f'GPU{j}':>7}" for j in ids))
        for i in ids:
            lines.append(f"  GPU{i:<3}" + "".join(f"{topo.pair(i, j):>7}" for j in ids))
        for key, why in topo.why.items():
            lines.append(f"  {key}: {topo.pairs[key]}, {why}")
    for g in topo.gpus:
        nv = (
            f"{g.nvlinks} NVLinks {fmt(g.nvlink_version)}, "
            f"{fmt(g.nvlink_max, lambda b: f'{b / 1e9:.0f} GB/s each way (theoretical)')}"
            if isinstance(g.nvlinks, int) and g.nvlinks
            else fmt(g.nvlink_version)
        )
        lines.append(
            f"  GPU {g.nvml_index}: {nv}; NUMA node {fmt(g.numa_node)}, CPUs {fmt(g.cpus)}"
        )
    return lines


def _snapshot_rows(s: GpuSnapshot) -> list[tuple[str, str]]:
    rows = [
        (
            "memory now",
            f"{fmt(s.memory_in_use, gib)} in use (used {fmt(s.memory_used, nbytes)}, "
            f"driver reserved {fmt(s.memory_reserved, nbytes)}, free {fmt(s.memory_free, gib)})",
        ),
        (
            "utilization",
            f"GPU {fmt(s.gpu_util, '{}%'.format)}, memory {fmt(s.mem_util, '{}%'.format)}",
        ),
        ("temperature", fmt(s.temperature_c, "{} C".format)),
        ("power draw", fmt(s.power_w, "{:.1f} W".format)),
        ("clocks now", f"SM {fmt(s.sm_clock_mhz, _mhz)}, mem {fmt(s.mem_clock_mhz, _mhz)}"),
        ("clocks held by", fmt(s.throttle, ", ".join)),
        (
            "PCIe now",
            f"gen {fmt(s.pcie_gen)} x{fmt(s.pcie_width)}, "
            f"tx {fmt(s.pcie_tx, lambda b: f'{b / 1e6:.1f} MB/s')}, "
            f"rx {fmt(s.pcie_rx, lambda b: f'{b / 1e6:.1f} MB/s')}",
        ),
    ]
    if not (isinstance(s.nvlink_tx, NA) and s.nvlink_tx.reason.startswith("no NVLink")):
        rows.append(
            (
                "NVLink now",
                f"tx {fmt(s.nvlink_tx, lambda b: f'{b / 1e9:.1f} GB/s')}, "
                f"rx {fmt(s.nvlink_rx, lambda b: f'{b / 1e9:.1f} GB/s')}",
            )
        )
    if isinstance(s.processes, NA):
        rows.append(("processes", fmt(s.processes)))
    elif not s.processes:
        rows.append(("processes", "none"))
    else:
        for i, p in enumerate(s.processes):
            name = fmt(p.name, short=True)
            rows.append(
                (
                    "processes" if i == 0 else "",
                    f"{p.pid} {name} {p.kind} {fmt(p.used_memory, nbytes)}",
                )
            )
        if s.pid_note is not None:
            rows.append(("", s.pid_note.reason))
    return rows
