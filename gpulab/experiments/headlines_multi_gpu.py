"""Headlines of the multi-GPU experiments (all-reduce, peer copies, DDP scaling): a bus
bandwidth or a scaling efficiency, and how many GPUs or ranks it took.

Registered into `headlines` (which imports this module at its end)."""

from __future__ import annotations

from typing import Any

from gpulab.core.results import Result
from gpulab.experiments.headlines import _for


@_for("allreduce")
def _allreduce(exp: Any, result: Result) -> str:
    s = result.summary
    bus = (s.get("busbw_gbs") or {}).get("all-reduce")
    if bus is None:
        return ""
    from gpulab.experiments.syllabus_support import size_label

    text = (
        f"all-reduce on {s['ranks']} ranks ({s['backend']}) reached a busbw of {bus:.3g} GB/s "
        f"at {size_label(s['largest_bytes'])}"
    )
    if s.get("allreduce_of_peer"):
        text += f", {s['allreduce_of_peer']:.0%} of the {s['peer_copy_gbs']:.3g} GB/s peer copy"
    return text


@_for("p2p")
def _p2p(exp: Any, result: Result) -> str:
    s = result.summary
    if not s.get("gpus"):
        return ""
    return (
        f"GPU-to-GPU copies ran {s['peer_gbs_min']:.3g}-{s['peer_gbs_max']:.3g} GB/s "
        f"between {s['gpus']} GPUs with peer access"
    )


@_for("ddp-scaling")
def _ddp(exp: Any, result: Result) -> str:
    s = result.summary
    sizes = s.get("world_sizes") or []
    if len(sizes) < 2:
        return ""
    n = sizes[-1]
    return (
        f"DDP on {n} ranks ({s['backend']}) trained at {s['efficiency_at_max']:.0%} scaling "
        f"efficiency ({s['samples_per_s'][n]:.3g} samples/s), loss curves matching 1 rank"
    )
