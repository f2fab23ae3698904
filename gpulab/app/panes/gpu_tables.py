"""What the GPU info pane shows, built from the inventory and one snapshot: pure functions.

The pane (`gpu_info.py`) owns the widgets, the selection and when to repaint; this module owns
the words and tables: a GPU's row in the list, the header above it, and the tables of fixed
facts, live figures, worker backends and versions below it. Nothing here reads widget state,
so each table is what its arguments say it is.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from gpulab.telemetry.inventory import GpuInventory, SystemInventory
from gpulab.telemetry.snapshot import GpuSnapshot
from gpulab.telemetry.values import NA, card_memory, gib, nbytes


def gpu_prompt(g: GpuInventory, snap: GpuSnapshot | None, selected: bool) -> str:
    """One GPU's row in the list: ▶ on the selected one, then memory, load and temperature."""
    mark = "▶" if selected else " "
    name = short_name(g.name)
    cuda = f"cuda:{g.cuda_index}" if isinstance(g.cuda_index, int) else f"nvml:{g.nvml_index}"
    if snap is None:
        return f"{mark} {cuda} {name}"
    used, total = snap.memory_in_use, snap.memory_total
    mem = (
        "mem N/A"
        if isinstance(used, NA) or isinstance(total, NA)
        else f"{used / 2**30:.1f}/{card_memory(total)}"
    )
    util = "N/A" if isinstance(snap.gpu_util, NA) else f"{snap.gpu_util}%"
    temp = "N/A" if isinstance(snap.temperature_c, NA) else f"{snap.temperature_c}°C"
    return f"{mark} {cuda} {name}  {mem}  {util}  {temp}"


def backends_table(worker: dict[str, Any] | None) -> Table:
    """CPU mode: which backends the worker's handshake says it has, in place of the facts."""
    t = _table()
    backends = ((worker or {}).get("inventory") or {}).get("backends") or {}
    if not backends:
        t.add_row("Worker", Text("not ready yet: backends appear when it reports", "dim"))
    for name, b in backends.items():
        state = (
            Text(f"yes {b.get('version', '')}", "green")
            if b.get("available")
            else Text(f"no: {b.get('reason', '')}", "dim")
        )
        t.add_row(name, state)
    return t


def short_name(name: Any) -> str:
    """The GPU's name without the "NVIDIA " prefix, or why it cannot be read."""
    if isinstance(name, NA):
        return "N/A (GPU unreadable)"
    return str(name).replace("NVIDIA ", "")


def header(inv: SystemInventory) -> Text:
    """One line: how many GPUs, the driver and the CUDA version it supports."""
    drv = "N/A" if isinstance(inv.driver_version, NA) else inv.driver_version
    cuda = "N/A" if isinstance(inv.cuda_driver_version, NA) else inv.cuda_driver_version
    n = len(inv.gpus)
    return Text(f"{n} GPU{'s' if n != 1 else ''} · driver {drv} · CUDA {cuda} (driver)")


def snap_key(s: GpuSnapshot) -> Any:
    """A value that changes when any shown figure of `s` does (the time aside), to skip repaints."""
    return tuple(str(v) for k, v in vars(s).items() if k != "t")


def _table() -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True, width=11)  # fixed: three tables line up
    t.add_column(overflow="fold")
    return t


def _v(value: Any, render: Any = str) -> Text:
    if isinstance(value, NA):
        return Text(f"N/A ({value.reason})", style="dim")
    return Text(render(value))


def _join(*parts: Text, sep: str = " · ") -> Text:
    """Parts side by side; an N/A whose reason was just given reads plain N/A."""
    out = Text()
    said: set[str] = set()
    for i, p in enumerate(parts):
        if i:
            out.append(sep)
        if p.plain.startswith("N/A (") and p.plain in said:
            out.append("N/A", style="dim")
            continue
        said.add(p.plain)
        out.append_text(p)
    return out


def details_table(g: GpuInventory, more: list[tuple[str, Text]] | None = None) -> Table:
    """The GPU's fixed facts (indices, name, UUID, SMs, L2, memory, clocks, ...) as rows, and
    `more` after them (its links)."""
    t = _table()
    if isinstance(g.name, NA) and isinstance(g.uuid, NA) and g.name == g.uuid:
        # Nothing about this GPU can be read (lost): say it once, not once per field.
        t.add_row("GPU", Text(f"N/A ({g.name.reason})", style="bold red"))
        t.add_row("Index", _join(Text(f"NVML {g.nvml_index}"), _v(g.cuda_index, "CUDA {}".format)))
        return t
    t.add_row(
        "GPU", _join(_v(g.name), _v(g.architecture), _v(g.compute_capability, "cc {}".format))
    )
    t.add_row("UUID", _v(g.uuid))
    t.add_row(
        "Index",
        _join(Text(f"NVML {g.nvml_index}"), _v(g.cuda_index, "CUDA {}".format)),
    )
    t.add_row("SMs", _v(g.sm_count))
    t.add_row("L2", _v(g.l2_cache, nbytes))
    t.add_row(
        "Memory",
        _join(
            _v(g.memory_total, lambda t: card_memory(t, g.cuda_memory_total)),
            _v(g.bus_width_bits, "{}-bit bus".format),
            _v(g.memory_bandwidth, lambda b: f"{b / 1e12:.2f} TB/s peak"),
        ),
    )
    t.add_row(
        "Max clocks",
        _join(
            _v(g.max_sm_clock_mhz, "SM {} MHz".format), _v(g.max_mem_clock_mhz, "mem {} MHz".format)
        ),
    )
    t.add_row(
        "PCIe max",
        _join(
            _v(g.pcie_max_gen, "gen {}".format),
            _v(g.pcie_max_width, "x{}".format),
            _v(g.pcie_bandwidth, lambda b: f"{b / 1e9:.0f} GB/s each way"),
        ),
    )
    t.add_row("Power limit", _v(g.power_limit_w, "{:.0f} W".format))
    mig = _v(g.mig_mode)
    if isinstance(g.mig_instances, list) and g.mig_instances:
        mig.append(f" · {len(g.mig_instances)} instances: ")
        mig.append(
            ", ".join(f"{i['slot']}: {_v(i['memory_total'], gib).plain}" for i in g.mig_instances)
        )
    t.add_row("MIG", mig)
    for label, value in more or []:
        t.add_row(label, value)
    return t


def live_table(s: GpuSnapshot | None) -> Table:
    """The GPU's live readings as label/value rows (a waiting line before the first sample)."""
    t = _table()
    if s is None:
        t.add_row("Live", Text("waiting for a sample", "dim"))
        return t
    if all(
        isinstance(v, NA) for k, v in vars(s).items() if k not in ("nvml_index", "t", "pid_note")
    ):
        t.add_row("Live", _v(s.memory_total))  # lost or unreadable: the reason once
        return t
    used = _v(s.memory_in_use, gib)
    used.append(" in use of ")
    used.append_text(_v(s.memory_total, gib))
    t.add_row("Used", _join(used, _v(s.memory_reserved, lambda r: f"driver reserved {nbytes(r)}")))
    t.add_row("Util", _join(_v(s.gpu_util, "GPU {}%".format), _v(s.mem_util, "memory {}%".format)))
    t.add_row(
        "Clocks",
        _join(_v(s.sm_clock_mhz, "SM {} MHz".format), _v(s.mem_clock_mhz, "mem {} MHz".format)),
    )
    t.add_row("Held by", _v(s.throttle, ", ".join))
    t.add_row(
        "Power",
        _join(_v(s.power_w, "{:.0f} W".format), _v(s.temperature_c, "{} °C".format)),
    )
    t.add_row(
        "PCIe now",
        _join(
            _v(s.pcie_gen, "gen {}".format),
            _v(s.pcie_width, "x{}".format),
            _v(s.pcie_tx, lambda b: f"tx {b / 1e6:.1f} MB/s"),
            _v(s.pcie_rx, lambda b: f"rx {b / 1e6:.1f} MB/s"),
        ),
    )
    if isinstance(s.processes, NA):
        t.add_row("Processes", _v(s.processes))
    elif not s.processes:
        t.add_row("Processes", Text("none", "dim"))
    else:
        for i, p in enumerate(s.processes):
            name = "" if isinstance(p.name, NA) else f" {p.name}"
            row = Text(f"{p.pid}{name} ({p.kind}) ")
            row.append_text(_v(p.used_memory, nbytes))
            t.add_row("Processes" if i == 0 else "", row)
        if s.pid_note is not None:
            t.add_row("", Text(s.pid_note.reason, "dim"))
    return t


def versions_table(inv: SystemInventory) -> Table:
    """Driver, CUDA and library versions, NVML's and the worker's."""
    t = _table()
    if inv.available:
        t.add_row(
            "Driver",
            _join(
                _v(inv.driver_version),
                _v(inv.cuda_driver_version, "CUDA {}".format),
                _v(inv.nvml_version, "NVML {}".format),
            ),
        )
    w = inv.worker_versions
    binding = f"nvidia-ml-py {inv.binding_version}" if inv.binding_version else "nvidia-ml-py N/A"
    if not w:
        t.add_row("Worker", Text(f"not ready yet · UI {binding}", "dim"))
        return t
    parts = [
        f"torch {w['torch']}" if "torch" in w else "torch N/A (not installed in the worker)",
        f"CUDA runtime {w['torch_cuda_runtime']}"
        if w.get("torch_cuda_runtime")
        else "CUDA runtime N/A (CPU-only torch)",
        f"CuPy {w['cupy']}" if "cupy" in w else "CuPy N/A (not installed)",
        f"nvidia-ml-py {w['nvidia-ml-py']}" if "nvidia-ml-py" in w else binding,
    ]
    t.add_row("Worker", Text(" · ".join(parts)))
    return t
