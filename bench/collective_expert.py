"""On a multi-GPU host: our expert ring all-reduce (the ring-allreduce exercise's expert.py) against
NCCL's all_reduce on the same buffers, as nccl-tests reports it (busbw = 2 (n-1)/n x bytes / time),
at sizes up to 1 GiB a rank, in interleaved rounds, on 2 ranks and on every GPU here.

    python3 bench/collective_expert.py OUT.json [SIZES_MIB ...]   (default 256 1024)

Each contender is checked once against NCCL's sum before it is timed. A round is a barrier, then
CALLS calls back to back between two synchronizes; each round's time is the slowest rank's; the
figure is the median over ROUNDS rounds, the two contenders taking turns (which goes first
alternates), so a clock or a neighbour drifting shows in both.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ROOT = Path(__file__).resolve().parents[1]
EXPERT = ROOT / "gpulab/exercises/catalog/42-ring-allreduce/expert.py"
ROUNDS, CALLS = 9, 5


def _expert():
    spec = importlib.util.spec_from_file_location("ring_expert", EXPERT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    if os.environ.get("RING_PIECES"):  # a sweep of the expert's one tuning knob
        mod.PIECES = int(os.environ["RING_PIECES"])
    return mod.ring_all_reduce


def _rank(rank: int, world: int, port: int, sizes: list[int], q) -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # the host's rule: no NVLink multicast
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        device_id=torch.device("cuda", rank),
    )
    ring = _expert()
    fns = {"expert ring": ring, "nccl all_reduce": lambda t: dist.all_reduce(t)}
    rows = []
    for mib in sizes:
        n = (mib << 20) // 4
        g = torch.Generator(device="cuda").manual_seed(1000 + rank)
        x = torch.randn(n, device="cuda", generator=g)
        want = x.clone()
        dist.all_reduce(want)
        for name, fn in fns.items():
            t = x.clone()
            fn(t)
            torch.cuda.synchronize()
            err = (t - want).abs().max().item()
            ok = torch.tensor([float(err <= 1e-4 * want.abs().max().item())], device="cuda")
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            if ok.item() != 1.0:
                raise SystemExit(f"{name} at {mib} MiB: wrong sum on some rank (max error {err:g})")
        bufs = {name: x.clone() for name in fns}
        times: dict[str, list[float]] = {name: [] for name in fns}
        for fn_name, fn in fns.items():  # one untimed round each
            fn(bufs[fn_name])
        for r in range(ROUNDS):
            order = list(fns) if r % 2 == 0 else list(fns)[::-1]
            for name in order:
                buf = bufs[name]
                buf.copy_(x)  # the same values every round: the sum cannot run away
                dist.barrier(device_ids=[rank])
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(CALLS):
                    fns[name](buf)
                torch.cuda.synchronize()
                dt = torch.tensor([(time.perf_counter() - t0) / CALLS], device="cuda")
                dist.all_reduce(dt, op=dist.ReduceOp.MAX)
                times[name].append(dt.item())
        bus = 2 * (world - 1) / world * n * 4
        row = {"world": world, "mib": mib}
        for name, ts in times.items():
            med = statistics.median(ts)
            row[name] = {
                "median_ms": round(1e3 * med, 3),
                "busbw_gbs": round(bus / med / 1e9, 1),
                "busbw_range_gbs": [round(bus / max(ts) / 1e9, 1), round(bus / min(ts) / 1e9, 1)],
            }
        row["expert_of_nccl"] = round(
            row["expert ring"]["busbw_gbs"] / row["nccl all_reduce"]["busbw_gbs"], 3
        )
        rows.append(row)
    if rank == 0:
        q.put(rows)
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(out: Path, sizes: list[int]) -> None:
    gpus = torch.cuda.device_count()
    worlds = sorted({2, gpus}) if gpus >= 2 else []
    result = {
        "device": torch.cuda.get_device_name(0) if gpus else None,
        "gpus": gpus,
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if gpus else None,
        "rounds": ROUNDS,
        "calls_a_round": CALLS,
        "pieces": os.environ.get("RING_PIECES") or "the expert's own",
        "rows": [],
    }
    ctx = mp.get_context("spawn")
    for world in worlds:
        q = ctx.SimpleQueue()
        mp.start_processes(
            _rank, args=(world, _free_port(), sizes, q), nprocs=world, start_method="spawn"
        )
        result["rows"].extend(q.get())
    out.write_text(json.dumps(result, indent=2) + "\n")
    for row in result["rows"]:
        print(
            f"{row['world']} ranks, {row['mib']} MiB: expert {row['expert ring']['busbw_gbs']} GB/s, "
            f"NCCL {row['nccl all_reduce']['busbw_gbs']} GB/s busbw: {row['expert_of_nccl']} of NCCL"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), [int(s) for s in sys.argv[2:]] or [256, 1024])
