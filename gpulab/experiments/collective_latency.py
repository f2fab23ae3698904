"""Where a small all-reduce's time goes: the calling code, the wait, and the collective itself.

At 16 B an all-reduce moves next to nothing, so its time is all overhead, and a figure of "65 us
per all-reduce" says nothing about whose. Measured on every rank, in one run, each figure the
slowest rank's per call (a collective ends when its last rank does), a median with its interval:

- issue: from Python's call to its return with the work queued (`async_op=True`): Python,
  torch.distributed's dispatch, and NCCL's enqueue of the kernel (gloo: the hand-off to its
  thread);
- call and wait: the same call and then the host waiting for the result (`wait()`, and on a GPU
  `torch.cuda.synchronize()`): what a loop that uses each result pays, host in the loop;
- event pair: on a GPU, CUDA events around each of many back-to-back calls (how the size sweep
  times): the stream's time per call, which is the host's rate whenever the host issues more
  slowly than the GPU finishes;
- barrier: `dist.barrier()` alone, which timing code often puts around each call;
- in a CUDA graph: on a GPU, GRAPH_CALLS all-reduces captured in one graph and replayed, the
  replay timed by events and divided by GRAPH_CALLS: the collective with no host in the loop,
  which is NCCL's own cost (its kernel and the handshake between the GPUs).

gloo runs collectives on CPU threads and has no graph: the split there is per call only.
"""

from __future__ import annotations

import time
from typing import Any

from gpulab.core.ranks import slowest

GRAPH_CALLS = 32  # all-reduces in one graph: n**32 stays finite in fp32 up to 8 ranks (check)
CALLS = 200  # timed calls per component (quick: QUICK_CALLS)
QUICK_CALLS = 30
GRAPH_REPLAYS = 20
WARMUP = 5

# component -> what it times, in the words a result row uses
COMPONENTS = {
    "issue": "from the Python call to its return with the work queued, no wait",
    "call and wait": "the call and the host's wait for its result: host in the loop",
    "event pair": "CUDA events around each of many back-to-back calls (the sweep's timing)",
    "barrier": "dist.barrier() alone",
    "in a CUDA graph": f"{GRAPH_CALLS} all-reduces captured in one CUDA graph, replayed: "
    "per collective, no host in the loop",
}
NO_GRAPH = (
    "gloo has no CUDA graph: its collectives run on CPU threads, each one called from Python, "
    "so there is no figure without the host in the loop; the split is per call only"
)


def _graph(rc: Any, x: Any) -> tuple[list[float] | None, str]:
    """Per-replay seconds of a graph of GRAPH_CALLS all-reduces (None and why, when capture
    failed on any rank). The graph is checked first: ones summed GRAPH_CALLS times in a row
    must give n ** GRAPH_CALLS on every rank."""
    import torch
    import torch.distributed as dist

    n = rc.world_size
    graph = torch.cuda.CUDAGraph()
    why = ""
    try:
        with torch.cuda.graph(graph):
            for _ in range(GRAPH_CALLS):
                dist.all_reduce(x)
    except Exception as exc:  # noqa: BLE001 - any capture failure is reported, not raised
        why = f"capture failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    ok = torch.tensor([0.0 if why else 1.0], device=rc.device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)  # every rank replays, or none
    if ok.item() < 1.0:
        return None, why or "capture failed on another rank"
    x.fill_(1.0)
    graph.replay()
    torch.cuda.synchronize()
    want = float(n) ** GRAPH_CALLS
    if abs(float(x[0].item()) - want) > 1e-4 * want:
        return None, f"the graph's result {float(x[0].item()):.6g} is not {n}**{GRAPH_CALLS}"
    x.zero_()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(GRAPH_REPLAYS + 1)]
    dist.barrier()
    torch.cuda.synchronize()
    marks[0].record()
    for k in range(GRAPH_REPLAYS):
        graph.replay()
        marks[k + 1].record()
    marks[-1].synchronize()
    return [marks[k].elapsed_time(marks[k + 1]) / 1e3 for k in range(GRAPH_REPLAYS)], ""


def _per_call(rc: Any, x: Any, calls: int) -> tuple[list[float], list[float]]:
    """Seconds of each call to issue it, and to issue it and wait for its result, this rank's,
    after a warm-up."""
    import torch.distributed as dist

    for _ in range(WARMUP):
        dist.all_reduce(x)
    rc.synchronize()
    dist.barrier()
    issue, done = [], []
    for _ in range(calls):
        t0 = time.perf_counter()
        work = dist.all_reduce(x, async_op=True)
        t1 = time.perf_counter()
        work.wait()
        rc.synchronize()
        issue.append(t1 - t0)
        done.append(time.perf_counter() - t0)
    return issue, done


def per_call_main(rc: Any, nbytes: int, calls: int) -> dict[str, float | int]:
    """A rank of a short job that times only the call and the wait (a quiz's probe)."""
    import torch

    x = torch.zeros(max(1, nbytes // 4), device=rc.device)
    return slowest(rc, _per_call(rc, x, calls)[1])


def measure(rc: Any, nbytes: int) -> dict[str, Any]:
    """Every component of a small all-reduce's time on this rank's group (rank 0's copy is the
    one used): component -> median/lo/hi/min/max/n seconds, or the reason it has no figure."""
    import torch
    import torch.distributed as dist

    calls = QUICK_CALLS if rc.quick else CALLS
    x = torch.zeros(max(1, nbytes // 4), device=rc.device)
    issue, done = _per_call(rc, x, calls)
    out: dict[str, Any] = {"issue": slowest(rc, issue), "call and wait": slowest(rc, done)}
    if rc.backend == "nccl":
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(calls + 1)]
        dist.barrier()
        rc.synchronize()
        marks[0].record()
        for k in range(calls):
            dist.all_reduce(x)
            marks[k + 1].record()
        marks[-1].synchronize()
        out["event pair"] = slowest(
            rc, [marks[k].elapsed_time(marks[k + 1]) / 1e3 for k in range(calls)]
        )
    barrier = []
    for _ in range(calls):
        t0 = time.perf_counter()
        dist.barrier()
        rc.synchronize()
        barrier.append(time.perf_counter() - t0)
    out["barrier"] = slowest(rc, barrier)
    if rc.backend != "nccl":
        out["in a CUDA graph"] = {"unavailable": NO_GRAPH}
        return out
    replays, why = _graph(rc, x)
    if replays is None:
        out["in a CUDA graph"] = {"unavailable": why}
    else:
        per = slowest(rc, replays)  # seconds a replay: GRAPH_CALLS collectives
        seconds = ("median", "lo", "hi", "min", "max")
        out["in a CUDA graph"] = {k: v / GRAPH_CALLS if k in seconds else v for k, v in per.items()}
    return out


def split(latency: dict[str, Any]) -> dict[str, float]:
    """The time of one call with the host in the loop, cut into what the host adds and what
    the collective costs with no host (a GPU with a graph figure): seconds, by part."""
    whole = latency["call and wait"]["median"]
    out = {"call and wait": whole, "issue": latency["issue"]["median"]}
    graph = latency.get("in a CUDA graph", {})
    if "median" in graph:
        out["collective alone"] = graph["median"]
        out["host adds"] = whole - graph["median"]
    return out


def words(latency: dict[str, Any], size: str) -> str:
    """One or two sentences: where a small all-reduce's time goes, with this run's figures."""

    def us(seconds: float) -> str:
        return f"{seconds * 1e6:.3g} us"

    parts = split(latency)
    text = (
        f"a {size} all-reduce takes {us(parts['call and wait'])} per call from Python with the "
        f"host waiting for it ({us(parts['issue'])} of that to issue the call)"
    )
    if "collective alone" in parts:
        text += (
            f"; in a CUDA graph, with no host in the loop, {us(parts['collective alone'])} per "
            f"collective, so the calling code adds {us(parts['host adds'])}"
        )
    else:
        text += f"; {latency['in a CUDA graph']['unavailable']}"
    return text
