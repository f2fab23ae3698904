"""How the GPUs are linked, as the GPU pane shows it: pure rendering (rich), no Textual.

With two or more GPUs joined by NVLink, a matrix like `nvidia-smi topo -m` (NV18 between a
pair, or the PCIe level they share), each GPU's NUMA node, the CPUs near each node, and the
NVLink figure the live traffic is read against: theoretical from the links' version and count,
and measured once a p2p run in this session has measured it. One GPU, or GPUs without NVLink,
get one line that says so (a matrix of "SYS" teaches nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpulab.telemetry.topology import GpuLinks, Topology
from gpulab.telemetry.values import NA

P2P = "p2p"  # the experiment whose runs measure a link's copy rate


def measured_peer(runs: Iterable[Any]) -> float | None:
    """The fastest GPU-to-GPU copy (bytes/s, one way) the newest finished p2p run of this
    session measured, or None."""
    for run in reversed(tuple(runs or ())):
        if getattr(run, "experiment", "") != P2P:
            continue
        summary = (getattr(run, "result", None) or {}).get("summary") or {}
        best = summary.get("peer_gbs_max")
        if isinstance(best, int | float) and best > 0:
            return float(best) * 1e9
    return None


def reference(links: GpuLinks | None, measured: float | None) -> tuple[float | None, str]:
    """(bytes/s, its name) the live NVLink traffic is a fraction of: the measured copy rate
    when a run measured it, else the links' theoretical figure; (None, why) without NVLink."""
    if links is None or not isinstance(links.nvlinks, int) or not links.nvlinks:
        return None, "no NVLink"
    if measured:
        return measured, "measured"
    if isinstance(links.nvlink_max, NA):
        return None, links.nvlink_max.reason
    return links.nvlink_max, "theoretical"


def _cell(code: str) -> Text:
    style = "green" if code.startswith("NV") else "yellow" if code == "SYS" else ""
    return Text(code, style=style or ("dim" if code in ("X", "?") else ""))


def links_view(topo: Topology, nvml_index: int, measured: float | None) -> Group | Text:
    """The matrix (2+ GPUs with NVLink) or the one line; GPU `nvml_index` is the pane's."""
    if len(topo.gpus) < 2 or not topo.nvlink:
        line = Text("Links ", "bold")
        line.append(topo.summary())
        g = topo.gpu(nvml_index)
        if g is not None and isinstance(g.numa_node, int):
            line.append(f" · NUMA {g.numa_node}", "dim")
        return line
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True, width=5)
    for _ in topo.gpus:
        t.add_column(no_wrap=True, width=4)
    t.add_column(no_wrap=True, width=4)
    t.add_row("Links", *(Text(str(g.nvml_index), "bold") for g in topo.gpus), Text("NUMA", "bold"))
    for a in topo.gpus:
        mark = "▶" if a.nvml_index == nvml_index else " "
        numa = str(a.numa_node) if isinstance(a.numa_node, int) else "N/A"
        t.add_row(
            f"{mark}{a.nvml_index}",
            *(_cell(topo.pair(a.nvml_index, b.nvml_index)) for b in topo.gpus),
            Text(numa, "dim" if numa == "N/A" else ""),
        )
    lines: list[Table | Text] = [t, Text(topo.summary(), "dim")]
    nodes: dict[int, str] = {}
    for g in topo.gpus:
        if isinstance(g.numa_node, int) and isinstance(g.cpus, str):
            nodes.setdefault(g.numa_node, g.cpus)
    if nodes:
        lines.append(Text(" · ".join(f"NUMA {n}: CPUs {c}" for n, c in sorted(nodes.items()))))
    g = topo.gpu(nvml_index)
    per_way, name = reference(g, measured)
    if g is not None and per_way is not None:
        line = Text(f"GPU {nvml_index}: {per_way / 1e9:,.0f} GB/s each way, {name}")
        if name == "measured" and isinstance(g.nvlink_max, float):
            line.append(f" ({g.nvlink_max / 1e9:,.0f} theoretical)", "dim")
        elif name == "theoretical":
            line.append(" (run p2p to measure it)", "dim")
        lines.append(line)
    return Group(*lines)


def links_rows(g: GpuLinks | None) -> list[tuple[str, Text]]:
    """The facts view's rows for one GPU: its NVLinks and its NUMA node."""
    if g is None:
        return []
    if isinstance(g.nvlinks, int) and g.nvlinks:
        nv = Text(f"{g.nvlinks} links")
        if isinstance(g.nvlink_version, str):
            nv.append(f", NVLink {g.nvlink_version}")
        nv.append({"switch": " to NVSwitch", "gpu": " to GPUs"}.get(str(g.nvlink_to), ""))
        if isinstance(g.nvlink_max, float):
            nv.append(f" · {g.nvlink_max / 1e9:,.0f} GB/s each way peak")
    else:
        why = g.nvlink_version.reason if isinstance(g.nvlink_version, NA) else "no NVLink"
        nv = Text(why, "dim")
    numa = Text(
        f"node {g.numa_node}" if isinstance(g.numa_node, int) else f"N/A ({_reason(g.numa_node)})",
        "" if isinstance(g.numa_node, int) else "dim",
    )
    if isinstance(g.cpus, str):
        numa.append(f" · CPUs {g.cpus}")
    return [("NVLink", nv), ("NUMA", numa)]


def _reason(value: Any) -> str:
    return value.reason if isinstance(value, NA) else str(value)
