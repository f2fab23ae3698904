"""The multi-GPU experiments under torchrun, one machine or several:

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29500 --rdzv-id lab1 -m gpulab.runner.multi.torchrun allreduce max_bytes=1Gi

Every process torchrun starts runs the same rank function the in-app experiment runs
(`gpulab.core.ranks` starts those on one machine); here torchrun's rendezvous gives each its
RANK, WORLD_SIZE and LOCAL_RANK. NCCL when CUDA is available (GPU = LOCAL_RANK), else gloo.
Rank 0 prints one JSON object per line: each row, then a summary. The environment (NCCL_*
included) is used as it is.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gpulab.core.params import ParamError
from gpulab.core.ranks import RankContext
from gpulab.experiments import allreduce, ddp_scaling
from gpulab.experiments.registry import get

EXPERIMENTS = ("allreduce", "ddp-scaling")
USAGE = (
    "usage: torchrun ... -m gpulab.runner.multi.torchrun {allreduce|ddp-scaling} [name=value ...]\n"
    "  allreduce: max_bytes (default 1 GiB on GPUs, 16 MiB on the CPU)\n"
    "  ddp-scaling: hidden, layers, batch, steps (this world size only)"
)


def parse(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """The experiment id and its parameters from `ID name=value ...`; usage and exit on a bad line."""
    if not argv or argv[0] not in EXPERIMENTS:
        raise SystemExit(USAGE)
    raw = {}
    for item in argv[1:]:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"expected name=value, got {item!r}\n{USAGE}")
        raw[name] = value
    try:
        return argv[0], get(argv[0]).params.validate(raw)
    except ParamError as exc:
        raise SystemExit(f"{argv[0]}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the experiment's rank function in this torchrun process; rank 0 prints rows and the
    summary as JSON."""
    exp_id, params = parse(sys.argv[1:] if argv is None else argv)
    if "RANK" not in os.environ:
        raise SystemExit("run me under torchrun (RANK and WORLD_SIZE are not set)")
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    gpu = torch.cuda.is_available()
    if gpu:
        torch.cuda.set_device(local)
    backend = "nccl" if gpu else "gloo"
    dist.init_process_group(backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    rc = RankContext(rank, n, backend, f"cuda:{local}" if gpu else "cpu")
    try:
        rows, summary = _run(exp_id, params, rc, gpu)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        for row in rows:
            print(json.dumps(row), flush=True)
        print(json.dumps({"summary": summary}), flush=True)
    return 0


def _run(exp_id: str, params: dict[str, Any], rc: RankContext, gpu: bool) -> tuple[list, dict]:
    if exp_id == "allreduce":
        cap = int(params["max_bytes"]) if gpu else min(allreduce.CPU_MAX_BYTES, params["max_bytes"])
        rows = allreduce.rank_main(rc, allreduce.sizes(cap, rc.world_size))
        bus = {r["op"]: r["busbw_gbs"] for r in rows if r["bytes"] == rows[-1]["bytes"]}
        ok = all(r["error"] == 0.0 for r in rows)
        return rows, {"ranks": rc.world_size, "backend": rc.backend, "busbw_gbs": bus, "exact": ok}
    cfg = {
        "hidden": params["hidden"] or (4096 if gpu else 256),
        "layers": int(params["layers"]),
        "batch": params["batch"] or (2048 if gpu else 64),
        "steps": params["steps"] or (30 if gpu else 10),
        "check_steps": 10,
    }
    out = ddp_scaling.rank_main(rc, cfg)
    rate = rc.world_size * cfg["batch"] / out["step_s"]
    return [out], {"ranks": rc.world_size, "backend": rc.backend, "samples_per_s": rate}


if __name__ == "__main__":
    raise SystemExit(main())
