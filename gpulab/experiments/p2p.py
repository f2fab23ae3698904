"""GPU-to-GPU copies: a bandwidth and latency matrix, with and without peer access.

Like nvbandwidth's device-to-device tests: for every ordered pair (src, dst), so both directions,
copy a buffer from GPU src to GPU dst. "peer" is a direct copy (torch's copy between devices uses
cudaMemcpyPeerAsync: over NVLink or PCIe without touching host memory when the driver allows
peer access); "via host" stages through pinned host memory, which is what a copy costs without
peer access. Latency is the time of an 8-byte peer copy. Next to the matrix, NVML's topology for
each pair (NVLink lanes, or the closest common PCIe ancestor).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from gpulab.core import ranks
from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Artifact, Measurement, Result
from gpulab.experiments import fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.topology import read_topology

REPEATS = 20  # timed copies per pair and mode, after WARMUP untimed ones
WARMUP = 3


def copy_bandwidth(src: int, dst: int, nbytes: int, *, peer: bool, repeats: int = 20) -> tuple:
    """(GB/s at the median, median, min, max seconds) of copying nbytes from GPU src to GPU
    dst, over `repeats` timed copies after a warm-up (the first copy maps the peer's memory)."""
    import torch

    a = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{src}")
    b = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{dst}")
    stage = None if peer else torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def once() -> None:
        if stage is None:
            b.copy_(a, non_blocking=True)
        else:
            stage.copy_(a, non_blocking=True)
            torch.cuda.synchronize(src)
            b.copy_(stage, non_blocking=True)

    times = []
    for i in range(repeats + WARMUP):
        torch.cuda.synchronize(src)
        torch.cuda.synchronize(dst)
        t0 = time.perf_counter()
        once()
        torch.cuda.synchronize(src)
        torch.cuda.synchronize(dst)
        if i >= WARMUP:  # the first copies set up peer mappings: not timed
            times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    return nbytes / median / 1e9, median, min(times), max(times)


def topology(count: int) -> dict[str, str]:
    """'i->j' -> how NVML says GPUs i and j are linked (gpulab.telemetry.topology; {} without
    NVML). NVML numbers GPUs by PCI bus; with CUDA_VISIBLE_DEVICES set, its order may differ
    from CUDA's."""
    session = NvmlSession()
    if not session.open():
        return {}
    try:
        topo = read_topology(session, count)
    finally:
        session.close()
    out = {}
    for i in range(count):
        for j in range(count):
            key = f"{min(i, j)}-{max(i, j)}"
            if i != j and key in topo.pairs:
                out[f"{i}->{j}"] = f"{topo.pairs[key]}: {topo.why[key]}"
    return out


class P2P(Experiment):
    """The `p2p` experiment: Copy bandwidth and latency between every pair of GPUs, peer vs
    through the host."""

    id = "p2p"
    title = "GPU-to-GPU copies (peer access)"
    summary = "Copy bandwidth and latency between every pair of GPUs, peer vs through the host."
    lesson = "many-gpus"
    params = ParamSet(
        (Int("bytes", 256 * 2**20, "bytes per copy", unit="bytes", min=8, max=2**33),)
    )
    contenders = (
        Contender("peer", "direct copy (peer access)", "torch-cuda"),
        Contender("via-host", "staged through pinned host memory", "torch-cuda"),
    )
    bench_params = ({"bytes": 256 * 2**20},)
    bench_suites = ("multi-gpu",)  # not "full": a one-GPU machine cannot run it

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        result = self.new_result(ctx, params)
        count = ranks.gpu_count(ctx) if ctx.has_cuda else 0
        if count < 2:
            why = (
                f"needs two or more GPUs; this machine has {count}"
                if ctx.has_cuda
                else "needs two or more GPUs (CPU mode: there is no GPU-to-GPU link to measure)"
            )
            for c in self.contenders:
                result.unavailable[c.id] = why
            result.headline = f"p2p: {why}"
            return self.finish(result)
        import torch

        nbytes = int(params["bytes"])
        fits.require_fit(ctx, nbytes * 2.2, f"a {result_rows.size_label(nbytes)} copy")
        can = {
            f"{i}->{j}": bool(torch.cuda.can_device_access_peer(i, j))
            for i in range(count)
            for j in range(count)
            if i != j
        }
        pairs = [(i, j) for i in range(count) for j in range(count) if i != j]
        matrix: dict[str, dict[str, float]] = {"peer": {}, "via-host": {}, "latency_us": {}}
        for k, (i, j) in enumerate(pairs):
            ctx.progress(k / len(pairs), f"GPU {i} -> GPU {j}")
            for mode in ("peer", "via-host"):
                gbs, secs, low, high = copy_bandwidth(i, j, nbytes, peer=mode == "peer")
                matrix[mode][f"{i}->{j}"] = gbs
                if mode == "peer":
                    how = "peer access " + ("on" if can[f"{i}->{j}"] else "off (the driver stages)")
                else:
                    how = "through pinned host memory: two PCIe copies, no peer access"
                m = Measurement(
                    contender=mode,
                    size=f"{i}->{j}",
                    time_median_s=secs,
                    time_min_s=low,
                    time_max_s=high,
                    runs=REPEATS,
                    throughput=gbs,
                    unit="GB/s",
                    note=f"{result_rows.size_label(nbytes)}; {how}",
                )
                result_rows.emit(ctx, result, m)
            lat = copy_bandwidth(i, j, 8, peer=True, repeats=REPEATS)[1]
            matrix["latency_us"][f"{i}->{j}"] = lat * 1e6
        topo = topology(count)
        result.artifacts.append(Artifact("matrix", "text", text=render(count, matrix, topo)))
        peer = matrix["peer"]
        result.summary = {
            "gpus": count,
            "bytes": nbytes,
            "peer_access": can,
            "matrix": matrix,
            "topology": topo,
            "peer_gbs_min": min(peer.values()),
            "peer_gbs_max": max(peer.values()),
        }
        result.explanation = (
            "With peer access the copy engine writes straight into the other GPU's memory over "
            "NVLink or PCIe; without it, every byte crosses PCIe twice through host memory. "
            "NVLink pairs copy several times faster than PCIe pairs, and a slow pair in the "
            "matrix is a GPU on the far side of a CPU socket or a missing link."
        )
        ctx.progress(1.0, "done")
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the range of GPU-to-GPU copy rates between the GPUs with peer access."""
        s = result.summary
        if not s.get("gpus"):
            return ""
        return (
            f"GPU-to-GPU copies ran {s['peer_gbs_min']:.3g}-{s['peer_gbs_max']:.3g} GB/s "
            f"between {s['gpus']} GPUs with peer access"
        )


def render(count: int, matrix: dict[str, dict[str, float]], topo: dict[str, str]) -> str:
    """The peer, via-host and latency matrices and the topology as text."""
    lines = []
    for mode, unit in (("peer", "GB/s"), ("via-host", "GB/s"), ("latency_us", "us")):
        lines.append(f"{mode} ({unit}), rows: source GPU, columns: destination")
        lines.append("      " + "".join(f"{j:>9}" for j in range(count)))
        for i in range(count):
            cells = [
                f"{matrix[mode][f'{i}->{j}']:>9.3g}" if i != j else f"{'-':>9}"
                for j in range(count)
            ]
            lines.append(f"{i:>6}" + "".join(cells))
        lines.append("")
    lines += [f"{pair}: {link}" for pair, link in topo.items()]
    return "\n".join(lines)


EXPERIMENT = P2P()
