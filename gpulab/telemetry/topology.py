"""How the GPUs are linked, from NVML: each GPU's NVLinks (up or down, their version, what is at
the other end), the PCIe path between every pair, each GPU's NUMA node and the CPUs near it;
and the live NVLink traffic from NVML's throughput counters.

Read once, with the inventory (`read_topology`): links do not change while a session runs. A pair
is named as `nvidia-smi topo -m` names it: NV<n> when n NVLinks join them (directly, or each GPU's
n links to an NVSwitch that joins them all), else the closest PCIe level they share: PIX (one PCIe
switch), PXB (several), PHB (a host bridge), NODE (the CPU's fabric within one NUMA node), SYS
(across CPU sockets). Every figure NVML refuses is an NA with why, never a guess.

The NVLink maximum here is the theoretical one per direction, from the links' version and count
(25 GB/s a link each way for NVLink 2 to 4, 50 for NVLink 5); what the links carry measured is the
p2p experiment's job, and the GPU pane shows it beside this once a run has measured it.

Live traffic: NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, summed over every link (scope UINT_MAX),
are counters of KiB since the driver loaded; a rate needs two readings (`NvlinkRates`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gpulab.telemetry.nvml import NvmlSession, reason_for, text
from gpulab.telemetry.values import NA, jsonable

MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS was 18 through Hopper; a GPU with fewer says "invalid"
# nvmlNvlinkVersion_t -> (NVLink generation, GB/s a link each way)
NVLINK_VERSIONS = {
    1: ("1.0", 20.0),
    2: ("2.0", 25.0),
    3: ("2.2", 25.0),
    4: ("3.0", 25.0),
    5: ("3.1", 25.0),
    6: ("4.0", 25.0),
    7: ("5.0", 50.0),
    8: ("6.0", 100.0),
}
DEVICE_GPU, DEVICE_SWITCH = 0, 2  # nvmlIntNvLinkDeviceType_t
P2P_CAPS_NVLINK, P2P_OK = 2, 0
# nvmlGpuTopologyLevel_t -> (nvidia-smi's code, what the path crosses)
LEVELS = {
    0: ("X", "the same board"),
    10: ("PIX", "one PCIe switch"),
    20: ("PXB", "several PCIe switches"),
    30: ("PHB", "a PCIe host bridge"),
    40: ("NODE", "the CPU's fabric, one NUMA node"),
    50: ("SYS", "the link between CPU sockets"),
}
FI_NVLINK_TX, FI_NVLINK_RX = 138, 139  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX, in KiB
ALL_LINKS = 0xFFFFFFFF  # a field's scope: summed over every link
_NVLINK_FIELDS = ((FI_NVLINK_TX, ALL_LINKS), (FI_NVLINK_RX, ALL_LINKS))  # a tuple: a cache key


def bus_id(value: Any) -> str:
    """A PCI bus id as NVML spells it, lower case ('00000000:18:00.0')."""
    return text(value).strip().lower()


def cpu_list(words: Any) -> str:
    """NVML's CPU affinity (64-bit words of a bit mask) as a list: '0-47,96-143'."""
    cpus = [w * 64 + b for w, word in enumerate(words) for b in range(64) if int(word) >> b & 1]
    spans: list[str] = []
    start = prev = None
    for c in [*cpus, None]:
        if c is not None and prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            spans.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = c
    return ",".join(spans)


@dataclass
class GpuLinks:
    """One GPU's place in the machine: its NVLinks, its PCI bus id, its NUMA node and CPUs."""

    nvml_index: int
    bus_id: str | NA = NA("not read")
    nvlinks: int | NA = NA("not read")  # links up
    nvlink_version: str | NA = NA("not read")  # "4.0"
    nvlink_to: str | NA = NA("not read")  # "switch" (an NVSwitch), "gpu" (peers) or "unknown"
    nvlink_peers: dict[int, int] = field(default_factory=dict)  # peer NVML index -> links
    nvlink_max: float | NA = NA("not read")  # bytes/s each way, theoretical
    numa_node: int | NA = NA("not read")
    cpus: str | NA = NA("not read")  # the CPUs nearest this GPU: "0-47"

    def to_dict(self) -> dict[str, Any]:
        """The GPU's links as JSON-ready data."""
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


@dataclass
class Topology:
    """Every GPU's links, and how every pair of GPUs is joined ("0-1": "NV18", "SYS", ...)."""

    gpus: list[GpuLinks] = field(default_factory=list)
    pairs: dict[str, str] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)  # a pair's path in words

    def to_dict(self) -> dict[str, Any]:
        """The topology as JSON-ready data."""
        return {"gpus": [g.to_dict() for g in self.gpus], "pairs": self.pairs, "why": self.why}

    def gpu(self, nvml_index: int) -> GpuLinks | None:
        """GPU `nvml_index`'s links, or None."""
        return next((g for g in self.gpus if g.nvml_index == nvml_index), None)

    def pair(self, i: int, j: int) -> str:
        """How GPUs i and j are joined ('X' for a GPU with itself, '?' when NVML did not say)."""
        if i == j:
            return "X"
        return self.pairs.get(f"{min(i, j)}-{max(i, j)}", "?")

    @property
    def nvlink(self) -> bool:
        """Whether any pair of GPUs is joined by NVLink."""
        return any(v.startswith("NV") for v in self.pairs.values())

    def summary(self) -> str:
        """One line: how the GPUs here talk to each other (the pane's line when there is no
        matrix worth showing: one GPU, or no NVLink)."""
        n = len(self.gpus)
        if n == 0:
            return "no GPU: no links to show"
        if n == 1:
            return "one GPU here: no GPU-to-GPU links"
        if not self.nvlink:
            paths = sorted({self.why[k] for k, v in self.pairs.items() if v != "?"})
            over = f", {' or '.join(paths)}" if paths else ""
            return f"no NVLink: PCIe between the {n} GPUs{over}"
        versions = {g.nvlink_version for g in self.gpus if isinstance(g.nvlink_version, str)}
        counts = {g.nvlinks for g in self.gpus if isinstance(g.nvlinks, int) and g.nvlinks}
        via = " via NVSwitch" if any(g.nvlink_to == "switch" for g in self.gpus) else ""
        version = f"NVLink {'/'.join(sorted(versions))}" if versions else "NVLink"
        links = f", {'/'.join(str(c) for c in sorted(counts))} links a GPU" if counts else ""
        return f"{version}{links}{via}"


def _links(session: NvmlSession, i: int, buses: dict[str, int], g: GpuLinks) -> None:
    up = 0
    versions: set[int] = set()
    to: set[str] = set()
    first: NA | None = None
    for link in range(MAX_LINKS):
        state = session.call(i, "nvmlDeviceGetNvLinkState", link)
        if isinstance(state, NA):
            first = first or state
            if "not supported" in state.reason or link and "NVML error" in state.reason:
                break  # no NVLink at all, or past this GPU's last link (invalid argument)
            continue
        if not state:
            continue
        up += 1
        version = session.call(i, "nvmlDeviceGetNvLinkVersion", link)
        if not isinstance(version, NA):
            versions.add(int(version))
        remote = session.call(i, "nvmlDeviceGetNvLinkRemotePciInfo", link)
        peer = None if isinstance(remote, NA) else buses.get(bus_id(remote.busId))
        kind = session.call(i, "nvmlDeviceGetNvLinkRemoteDeviceType", link)
        if peer is not None:
            g.nvlink_peers[peer] = g.nvlink_peers.get(peer, 0) + 1
            to.add("gpu")
        elif not isinstance(kind, NA) and int(kind) == DEVICE_SWITCH:
            to.add("switch")
    if up == 0:
        why = first.reason if first is not None else "no link is up"
        g.nvlinks = 0
        g.nvlink_version = g.nvlink_max = g.nvlink_to = NA(f"no NVLink: {why}")
        return
    g.nvlinks = up
    g.nvlink_to = "switch" if "switch" in to else "gpu" if to else "unknown"
    if len(versions) == 1 and (v := versions.pop()) in NVLINK_VERSIONS:
        name, per_link = NVLINK_VERSIONS[v]
        g.nvlink_version = name
        g.nvlink_max = up * per_link * 1e9
    else:
        why = "links of several versions" if versions else "NVML did not give the version"
        g.nvlink_version = NA(why)
        g.nvlink_max = NA(f"needs the links' version: {why}")


def _numa(session: NvmlSession, i: int, g: GpuLinks) -> None:
    node = session.call(i, "nvmlDeviceGetNumaNodeId")
    if isinstance(node, NA) and isinstance(g.bus_id, str):
        # Older drivers: the kernel's answer for the GPU's PCI device
        path = Path("/sys/bus/pci/devices") / g.bus_id[-12:] / "numa_node"
        with contextlib.suppress(OSError, ValueError):
            node = int(path.read_text().strip())
    if isinstance(node, int) and node < 0:
        node = NA("one NUMA node (the kernel reports none)")
    g.numa_node = node
    # NVML fills as many 64-bit words as it is given: enough for 1024 CPUs, or this machine's
    words = max(16, -(-(os.cpu_count() or 64) // 64))
    mask = session.call(i, "nvmlDeviceGetCpuAffinity", words)
    g.cpus = mask if isinstance(mask, NA) else (cpu_list(mask) or NA("an empty CPU mask"))


def read_topology(session: NvmlSession, count: int) -> Topology:
    """The links of GPUs 0..count-1 (NVML indices); never raises."""
    topo = Topology(gpus=[GpuLinks(nvml_index=i) for i in range(count)])
    buses: dict[str, int] = {}
    for g in topo.gpus:
        pci = session.call(g.nvml_index, "nvmlDeviceGetPciInfo")
        g.bus_id = pci if isinstance(pci, NA) else bus_id(pci.busId)
        if isinstance(g.bus_id, str):
            buses[g.bus_id] = g.nvml_index
    for g in topo.gpus:
        _links(session, g.nvml_index, buses, g)
        _numa(session, g.nvml_index, g)
    for a in topo.gpus:
        for b in topo.gpus:
            if b.nvml_index > a.nvml_index:
                _pair(session, topo, a, b)
    return topo


def _pair(session: NvmlSession, topo: Topology, a: GpuLinks, b: GpuLinks) -> None:
    i, j = a.nvml_index, b.nvml_index
    key = f"{i}-{j}"
    direct = a.nvlink_peers.get(j, 0)
    if direct:
        topo.pairs[key], topo.why[key] = f"NV{direct}", f"{direct} NVLinks between them"
        return
    if a.nvlink_to == "switch" and b.nvlink_to == "switch":
        hb = session.handle(j)
        status = (
            session.call(i, "nvmlDeviceGetP2PStatus", hb, P2P_CAPS_NVLINK)
            if not isinstance(hb, NA)
            else hb
        )
        if isinstance(status, NA) or int(status) == P2P_OK:
            n = min(x for x in (a.nvlinks, b.nvlinks) if isinstance(x, int))
            topo.pairs[key] = f"NV{n}"
            topo.why[key] = f"{n} NVLinks each to the NVSwitches that join them"
            return
    hb = session.handle(j)
    level = (
        session.call(i, "nvmlDeviceGetTopologyCommonAncestor", hb) if not isinstance(hb, NA) else hb
    )
    if isinstance(level, NA):
        topo.pairs[key], topo.why[key] = "?", level.reason
        return
    code, words = LEVELS.get(int(level), (f"L{int(level)}", f"PCIe level {int(level)}"))
    topo.pairs[key], topo.why[key] = code, f"through {words}"


def nvlink_counters(session: NvmlSession, i: int) -> tuple[float, int, int] | NA:
    """(time in s, KiB sent, KiB received) over every NVLink of GPU `i` since the driver loaded,
    or NA with why."""
    values = session.call(i, "nvmlDeviceGetFieldValues", _NVLINK_FIELDS)
    if isinstance(values, NA):
        return values
    tx, rx = values[0], values[1]
    for v in (tx, rx):
        if int(v.nvmlReturn) != 0:  # each field has its own return code
            return NA(reason_for(_Code(int(v.nvmlReturn))))
    stamp = max(int(tx.timestamp), int(rx.timestamp))
    return stamp / 1e6, int(tx.value.ullVal), int(rx.value.ullVal)


class _Code(Exception):
    """An NVML return code carried the way NvmlSession's reasons read it."""

    def __init__(self, value: int) -> None:
        super().__init__(f"NVML return code {value}")
        self.value = value


class NvlinkRates:
    """NVLink bytes/s per GPU from two readings of the counters (the reader keeps one)."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, int, int]] = {}

    def read(self, session: NvmlSession, i: int, now: float) -> tuple[float | NA, float | NA]:
        """(sent, received) bytes/s on GPU `i` since the last read; NA on the first one."""
        got = nvlink_counters(session, i)
        if isinstance(got, NA):
            self._last.pop(i, None)
            return got, got
        t = got[0] if got[0] > 0 else now
        last = self._last.get(i)
        self._last[i] = (t, got[1], got[2])
        if last is None or t <= last[0]:
            wait = NA("measuring: needs a second reading")
            return wait, wait
        dt = t - last[0]
        return (got[1] - last[1]) * 1024 / dt, (got[2] - last[2]) * 1024 / dt

    def clear(self) -> None:
        """Forget the readings (the NVML session was closed)."""
        self._last.clear()
