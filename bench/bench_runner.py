"""Runner latencies, measured end to end through the real client and worker (not a pytest).

    python bench/bench_runner.py --out bench/results/runner-cpu.json

- cold start: spawn -> handshake of a fresh worker (imports, CUDA init, registry), and the
  worker's own breakdown of that time;
- submit -> first event with a warm worker (target: median <= 20 ms on the CPU machine);
- cancel latency: cooperative (the job checks the flag) and killed (the job ignores it, so the
  worker is killed after the grace period);
- kill -> ready: a job ignoring its cancel is killed after the grace period; how long until a
  worker is ready again, with the standby spare (the client's default: the spare is promoted) and
  without it (a fresh worker is spawned: imports and all). The issue's bound is cancel() -> ready
  within 3 s, grace included;
- the spare's cost: its resident host memory while it waits, and its import time.
Every figure is a median over repeated runs, with the raw samples kept in the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab.core import events as ev  # noqa: E402
from gpulab.runner.client.runner_client import RunnerClient  # noqa: E402

TARGET_FIRST_EVENT_MS = 20.0
TARGET_CANCEL_READY_S = 3.0  # the issue: a job ignoring cancel(), killed, and ready again


def summary(samples: list[float], scale: float = 1.0, unit: str = "ms") -> dict[str, Any]:
    xs = sorted(s * scale for s in samples)
    return {
        "unit": unit,
        "n": len(xs),
        "median": statistics.median(xs),
        "min": xs[0],
        "max": xs[-1],
        "p90": xs[min(len(xs) - 1, int(0.9 * len(xs)))],
        "samples": [round(x, 4) for x in xs],
    }


async def first_event(job: Any) -> float:
    async for _ in job:
        return time.perf_counter()
    raise RuntimeError("job without events")


async def cold_starts(n: int) -> tuple[list[float], list[dict[str, float]], dict[str, Any]]:
    ready, warm, hello = [], [], {}
    for _ in range(n):
        async with RunnerClient(standby=False) as client:
            hello = await client.wait_ready(300)
            ready.append(hello["ready_s"])
            warm.append(hello["warm"])
    return ready, warm, hello


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


async def wait_standby(client: RunnerClient) -> None:
    deadline = time.monotonic() + 300
    while not client.standby_ready:
        if time.monotonic() > deadline:
            raise RuntimeError("the standby worker never became ready")
        await asyncio.sleep(0.01)


async def warm_latencies(client: RunnerClient, n: int) -> tuple[list[float], list[float]]:
    """Submit a job, time its first event, cancel it, time the cancel: n times, one worker."""
    firsts, cancels = [], []
    for i in range(n + 3):
        t0 = time.perf_counter()
        job = await client.submit("break-it", {"mode": "hang"})
        t1 = await first_event(job)
        async for event in job:  # wait until the loop runs (its first progress)
            if event["type"] == ev.PROGRESS:
                break
        t2 = time.perf_counter()
        await client.cancel(job)
        t3 = time.perf_counter()
        assert job.final is not None and job.final.get("how") == "cooperative", job.final
        if i >= 3:  # the first jobs warm up the client and the worker's imports
            firsts.append(t1 - t0)
            cancels.append(t3 - t2)
    return firsts, cancels


async def kill_latencies(
    client: RunnerClient, n: int
) -> tuple[list[float], list[float], list[dict[str, Any]]]:
    """Cancel a job that ignores cancels: cancel -> cancelled (the grace, then the kill), then
    cancelled -> a worker ready again. With standby on, each round starts with a waiting spare."""
    cancels, ready, spares = [], [], []
    for _ in range(n):
        await client.wait_ready(300)
        if client.standby:
            await wait_standby(client)
            info = dict(client.standby_info or {})
            info["rss_bytes"] = rss_bytes(info["pid"])
            spares.append(info)
        job = await client.submit("break-it", {"mode": "hang-ignoring-cancel"})
        async for event in job:
            if event["type"] == ev.PROGRESS:
                break
        t0 = time.perf_counter()
        await client.cancel(job)
        t1 = time.perf_counter()
        assert job.final is not None and job.final.get("how") == "killed", job.final
        hello = await client.wait_ready(300)
        t2 = time.perf_counter()
        assert hello["from_standby"] == client.standby, hello
        cancels.append(t1 - t0)
        ready.append(t2 - t1)
    return cancels, ready, spares


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    load_before = load_average()
    ready, warm, hello = await cold_starts(args.cold)
    inv = hello["inventory"]
    async with RunnerClient() as client:
        await client.wait_ready(300)
        await wait_standby(client)  # the steady state of a running lab: a spare waiting
        firsts, coop = await warm_latencies(client, args.repeats)
        killed, kill_ready, spares = await kill_latencies(client, args.kills)
        grace = client.cancel_grace_s
    async with RunnerClient(standby=False) as cold_client:
        _, respawn, _ = await kill_latencies(cold_client, args.kills)
    first = summary(firsts, 1000)
    cancel_ready = [k + r for k, r in zip(killed, kill_ready, strict=True)]
    gpus = [d for d in inv["devices"] if d["kind"] == "cuda"]
    return {
        "benchmark": "runner",
        "device": gpus[0]["name"] if gpus else f"CPU mode: {inv.get('gpu_reason', '')}",
        "machine": {
            "cpu": inv.get("cpu", ""),
            "cpu_count": inv.get("cpu_count", 0),
            "platform": platform.platform(),
            "load_average_before": load_before,
            "load_average_after": load_average(),
        },
        "versions": {k: v for k, v in inv.get("versions", {}).items() if v},
        "git_commit": git_commit(),
        "cold_start_to_ready": {
            **summary(ready, 1.0, "s"),
            "worker_breakdown_median_s": {
                k: statistics.median(w[k] for w in warm) for k in warm[0]
            },
        },
        "submit_to_first_event": {
            **first,
            "target_median_ms": TARGET_FIRST_EVENT_MS,
            "target_met": first["median"] <= TARGET_FIRST_EVENT_MS,
        },
        "cancel_cooperative": summary(coop, 1000),
        "cancel_killed": {**summary(killed, 1000), "grace_s": grace},
        "kill_to_ready_standby": summary(kill_ready, 1.0, "s"),
        "cancel_to_ready_standby": {
            **summary(cancel_ready, 1.0, "s"),
            "target_s": TARGET_CANCEL_READY_S,
            "target_met": max(cancel_ready) <= TARGET_CANCEL_READY_S,
        },
        "respawn_to_ready": {
            **summary(respawn, 1.0, "s"),
            "note": "standby off: kill -> a freshly spawned worker's handshake",
        },
        "standby": {
            "rss_mib_median": statistics.median(x["rss_bytes"] for x in spares) / 2**20,
            "imports_s_median": statistics.median(x["warm"]["imports_s"] for x in spares),
            "cuda_context_while_waiting": sorted({str(x.get("cuda_context")) for x in spares}),
        },
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/results/runner.json")
    p.add_argument("--repeats", type=int, default=50, help="warm submit/cancel rounds")
    p.add_argument("--cold", type=int, default=3, help="fresh workers started")
    p.add_argument("--kills", type=int, default=3, help="kill-and-respawn rounds")
    args = p.parse_args()
    result = asyncio.run(main_async(args))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    f, c = result["submit_to_first_event"], result["cold_start_to_ready"]
    print(f"device: {result['device']}")
    print(f"cold start to ready: median {c['median']:.2f} s  {c['worker_breakdown_median_s']}")
    print(
        f"submit -> first event: median {f['median']:.2f} ms (p90 {f['p90']:.2f}, n {f['n']})"
        f"  target <= {TARGET_FIRST_EVENT_MS:g} ms: {'met' if f['target_met'] else 'MISSED'}"
    )
    for key in ("cancel_cooperative", "cancel_killed"):
        print(f"{key}: median {result[key]['median']:.1f} ms")
    k, r = result["kill_to_ready_standby"], result["respawn_to_ready"]
    cr = result["cancel_to_ready_standby"]
    print(f"kill -> ready with the standby spare: median {k['median']:.3f} s (max {k['max']:.3f})")
    print(
        f"cancel -> ready with the standby spare: max {cr['max']:.2f} s  target <= "
        f"{TARGET_CANCEL_READY_S:g} s: {'met' if cr['target_met'] else 'MISSED'}"
    )
    print(f"kill -> ready without it (fresh worker): median {r['median']:.2f} s")
    sb = result["standby"]
    print(
        f"the spare: {sb['rss_mib_median']:.0f} MiB RSS while waiting, "
        f"imports {sb['imports_s_median']:.2f} s, CUDA context {sb['cuda_context_while_waiting']}"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
