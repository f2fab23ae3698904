"""The GPU at a glance: the live figures first, as nvitop shows them, then the processes.

Compact (a short or narrow screen): one line per figure with a bar. Tall: a sparkline of the
last minutes beside utilization, memory and power. Pure rendering (rich), no Textual: the pane
decides when to redraw and keeps the history.
"""

from __future__ import annotations

import os
from collections import deque

from rich.table import Table
from rich.text import Text

from gpulab.telemetry.snapshot import GpuSnapshot
from gpulab.telemetry.values import NA, nbytes

SPARKS = "▁▂▃▄▅▆▇█"
HISTORY_POINTS = 90  # one point per live repaint (2 s idle): three minutes
HISTORY_KEYS = ("util", "memory", "power")


class History:
    """The last HISTORY_POINTS readings of utilization, memory and power, as fractions of full."""

    def __init__(self) -> None:
        self.points: dict[str, deque[float | None]] = {
            k: deque(maxlen=HISTORY_POINTS) for k in HISTORY_KEYS
        }
        self.last_t = -1.0

    def add(self, s: GpuSnapshot, limit_w: float | NA) -> None:
        """Add a sample's utilization, memory and power fractions (once per sample)."""
        if s.t == self.last_t:
            return  # a redraw without a new sample adds nothing
        self.last_t = s.t
        self.points["util"].append(None if isinstance(s.gpu_util, NA) else s.gpu_util / 100)
        used, total = s.memory_in_use, s.memory_total
        self.points["memory"].append(
            None if isinstance(used, NA) or isinstance(total, NA) or not total else used / total
        )
        p = s.power_w
        self.points["power"].append(
            None if isinstance(p, NA) or isinstance(limit_w, NA) or not limit_w else p / limit_w
        )


def sparkline(values: deque[float | None] | list[float | None], width: int) -> Text:
    """The last `width` values (fractions 0..1) as block characters; a gap where unread."""
    out = Text(style="cyan")
    for v in list(values)[-width:]:
        if v is None:
            out.append(" ")
        else:
            out.append(SPARKS[max(0, min(len(SPARKS) - 1, round(v * (len(SPARKS) - 1))))])
    return out


def bar(fraction: float | None, width: int) -> Text:
    """A bar `width` cells wide for `fraction` (green, then yellow, then red); dots when unread."""
    if fraction is None:
        return Text("·" * width, style="dim")
    filled = max(0, min(width, round(fraction * width)))
    style = "green" if fraction < 0.6 else "yellow" if fraction < 0.9 else "red"
    out = Text("█" * filled, style=style)
    out.append("░" * (width - filled), style="dim")
    return out


def glance(
    s: GpuSnapshot | None,
    limit_w: float | NA,
    history: History | None,
    width: int,
    tall: bool,
    nvlink: tuple[float | None, str] = (None, ""),
    pcie_max: float | NA = NA("not given"),
) -> Table:
    """Utilization, memory, power/limit, SM clock, temperature, PCIe (against `pcie_max`, its
    link's bytes/s each way) and, on a GPU with NVLink, its traffic against `nvlink` (bytes/s
    each way and what that figure is): a line each."""
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True, width=5)
    t.add_column(no_wrap=True, overflow="ellipsis")
    if s is None:
        t.add_row("Live", Text("waiting for a sample", "dim"))
        return t
    # compact: a bar per figure; tall: the last minutes as a sparkline beside it, or instead
    # of it when the pane is too narrow for both (the sparkline's last cell is the level now)
    spark_only = tall and width < 60
    bar_w = 0 if spark_only else max(6, min(20, width - 30))
    spark_w = 0 if not tall else max(0, width - 6 - bar_w - 17)
    util = None if isinstance(s.gpu_util, NA) else s.gpu_util / 100
    used, total = s.memory_in_use, s.memory_total
    mem = None if isinstance(used, NA) or isinstance(total, NA) or not total else used / total
    power = (
        None
        if isinstance(s.power_w, NA) or isinstance(limit_w, NA) or not limit_w
        else s.power_w / limit_w
    )

    def row(label: str, fraction: float | None, figure: str, key: str | None) -> None:
        line = bar(fraction, bar_w) if bar_w else Text()
        if spark_w >= 6 and key and history is not None:
            if bar_w:
                line.append(" ")
            # right-aligned: the newest reading sits beside the figure, older ones to the left
            line.append("·" * max(0, spark_w - min(len(history.points[key]), spark_w)), "dim")
            line.append_text(sparkline(history.points[key], spark_w))
        elif not bar_w:
            line = bar(fraction, 10)
        line.append(f" {figure}")
        t.add_row(label, line)

    row("GPU", util, "N/A" if util is None else f"{s.gpu_util:3d}%", "util")
    if mem is None or isinstance(used, NA) or isinstance(total, NA):
        mem_text = "N/A"
    else:
        mem_text = f"{used / 2**30:.1f}/{total / 2**30:.1f} GiB"
    row("Mem", mem, mem_text, "memory")
    if isinstance(s.power_w, NA):
        p_text = "N/A"
    elif isinstance(limit_w, NA):
        p_text = f"{s.power_w:.0f} W"
    else:
        p_text = f"{s.power_w:.0f}/{limit_w:.0f} W"
    row("Pwr", power, p_text, "power")
    facts = [
        "SM N/A" if isinstance(s.sm_clock_mhz, NA) else f"SM {s.sm_clock_mhz} MHz",
        "N/A °C" if isinstance(s.temperature_c, NA) else f"{s.temperature_c} °C",
    ]
    t.add_row("Clk", Text("  ".join(facts)))
    if isinstance(s.pcie_tx, NA) or isinstance(s.pcie_rx, NA):
        pcie = Text("N/A", "dim")
    else:
        pcie = Text(f"↑ {s.pcie_tx / 1e6:.0f} MB/s  ↓ {s.pcie_rx / 1e6:.0f} MB/s")
        if not isinstance(pcie_max, NA):
            pcie.append(f" of {pcie_max / 1e9:.0f} GB/s")
        if not isinstance(s.pcie_gen, NA) and not isinstance(s.pcie_width, NA):
            pcie.append(f"  gen{s.pcie_gen} x{s.pcie_width}", "dim")
    t.add_row("PCIe", pcie)
    peak, name = nvlink
    if peak:
        tx, rx = s.nvlink_tx, s.nvlink_rx
        if isinstance(tx, NA) or isinstance(rx, NA):
            why = tx.reason if isinstance(tx, NA) else "N/A"
            t.add_row("NVL", Text(f"{bar(None, bar_w or 10).plain} {why}", "dim"))
        else:
            line = bar(max(tx, rx) / peak, bar_w or 10)
            line.append(f" ↑ {tx / 1e9:.0f} ↓ {rx / 1e9:.0f} of {peak / 1e9:.0f} GB/s")
            line.append(f" {name}", "dim")
            t.add_row("NVL", line)
    return t


def user_of(pid: int) -> str:
    """The process owner's name from /proc (this PID namespace only); '?' when unknown."""
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return "?"
    try:
        import pwd  # deferred: Unix only (the ImportError below is the rest)

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def processes(s: GpuSnapshot | None, worker_pid: int | None, width: int) -> Table:
    """PID, user, command and GPU memory of every process on the GPU; the lab's worker marked."""
    t = Table.grid(padding=(0, 1))
    t.add_column("pid", justify="right", no_wrap=True, min_width=7)
    t.add_column("user", no_wrap=True, min_width=4, max_width=10, overflow="ellipsis")
    t.add_column("mem", justify="right", no_wrap=True, min_width=7)
    t.add_column("command", no_wrap=True, overflow="ellipsis")
    t.add_row(*(Text(h, "bold underline") for h in ("PID", "USER", "GPU MEM", "COMMAND")))
    if s is None:
        return t
    if isinstance(s.processes, NA):
        t.add_row("", "", "", Text(f"N/A ({s.processes.reason})", "dim"))
        return t
    if not s.processes:
        t.add_row("", "", "", Text("no process on this GPU", "dim"))
        return t
    for p in sorted(
        s.processes,
        key=lambda p: -(p.used_memory if isinstance(p.used_memory, int) else 0),
    ):
        mine = worker_pid is not None and p.pid == worker_pid
        command = "" if isinstance(p.name, NA) else str(p.name)
        cmd = Text(command or p.kind)
        if mine:
            cmd = Text("◆ gpulab worker ", "bold green").append(command, "")
        mem = "N/A" if isinstance(p.used_memory, NA) else nbytes(p.used_memory)
        t.add_row(str(p.pid), user_of(p.pid), mem, cmd)
    if s.pid_note is not None:
        t.add_row("", "", "", Text(s.pid_note.reason, "dim"))
    return t
