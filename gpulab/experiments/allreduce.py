"""All-reduce, all-gather and reduce-scatter over message sizes, as nccl-tests measure them.

Every rank (one process per GPU: NCCL; on the CPU: gloo) runs each collective on each size, the
ranks agree on a repeat count, and the time of a size is the slowest rank's mean. From it, as
nccl-tests' PERFORMANCE.md defines them (S bytes, n ranks, t seconds):

- algbw = S / t, with S the all-reduce buffer, all-gather's gathered output, reduce-scatter's input;
- busbw = algbw x 2(n-1)/n for all-reduce, algbw x (n-1)/n for all-gather and reduce-scatter:
  the bytes each link must carry in the best ring algorithm, so busbw compares with the link's
  own speed (a peer copy) whatever n is. That is a ceiling for a ring (or tree): its busbw
  cannot pass the slowest link per direction. NCCL's NVLS algorithm on NVSwitch systems reduces
  inside the switch and moves fewer bytes per GPU, so the same formula can report more than one
  link's figure (about 480 GB/s all-reduce busbw on 8 H100s, against 450 GB/s per direction).

Before timing, each size is checked on every rank: the inputs are small integers (exact in
fp32), so the sum must be exact; the largest error over ranks is reduced to rank 0.

Each point is the median over iterations with its 95% interval (gpulab.core.interval). Beside
the measured all-reduce, the ring's alpha-beta model (gpulab.experiments.ring_model), fitted to
this run's smallest and largest all-reduce; then the largest all-reduce again on 2 .. n-1 ranks
against what that model predicts; and where a 16 B all-reduce's time goes, with the host in the
loop and (on GPUs) without it (gpulab.experiments.collective_latency).
"""

from __future__ import annotations

import time
from typing import Any

from gpulab.core import ranks
from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Measurement, Result, Series, Verdict
from gpulab.experiments import collective_latency, fits, result_rows, ring_model
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.p2p import copy_bandwidth
from gpulab.render.results import fmt_num, fmt_time

OPS = ("all-reduce", "all-gather", "reduce-scatter")
CPU_MAX_BYTES = 16 * 2**20  # gloo moves bytes through the kernel's loopback: stop at 16 MiB
QUICK_MAX_BYTES = 64 * 2**10
STEP = 8  # sizes 8 B, 64 B, 512 B, ... (x8 each)
LATENCY_BYTES = 16  # the small message whose time is split into its parts
NO_FIT = (
    "no ring model: the largest all-reduce was no slower than the smallest, so this run never "
    "left the latency regime and has no bandwidth to fit; run with a larger max_bytes"
)
# Why a busbw row may stand above the peer copy: the ring formula assumes bytes NVLS never moves.
NVLS_NOTE = (
    "busbw above one link's peer copy: on NVSwitch systems NCCL's NVLS reduces inside the "
    "switch and moves fewer bytes per GPU than the ring formula counts"
)


EXPLANATION = (
    "Small messages are all latency: the time hardly changes from 8 B to a few KiB, so "
    "the bandwidth climbs with size until the links are full. busbw removes the ring's "
    "arithmetic (each byte crosses 2(n-1)/n links in an all-reduce), so it is comparable "
    "to one link's peer-copy bandwidth: for a ring, near 100% means the collective keeps "
    "every link busy, and the slowest link per direction caps it. Above 100% is possible "
    "on NVSwitch systems, where NCCL's NVLS algorithm reduces inside the switch and moves "
    "fewer bytes per GPU (about 480 GB/s busbw on 8 H100s, above a link's 450). On the "
    "CPU, gloo copies through the kernel's loopback sockets. The dotted line is the ring's "
    "alpha-beta model, t = 2(n-1) alpha + 2(n-1)/n S/B, with alpha and B fitted to this run's "
    "smallest and largest all-reduce (the summary says which): where the points leave it, "
    "NCCL changed protocol or algorithm, which two constants cannot know. The same model "
    "predicts the largest all-reduce on fewer ranks (the plot against ranks, when this run "
    "had 3 or more). The latency rows split a 16 B all-reduce: what Python's call costs, the "
    "host's wait, a barrier, and on GPUs the collective in a CUDA graph with no host in the "
    "loop, which is what NCCL itself costs."
)


def sizes(max_bytes: int, world_size: int) -> list[int]:
    """Message sizes from 8 B up to max_bytes, each a multiple of 4 bytes x world_size (so
    all-gather and reduce-scatter split it evenly into fp32 chunks)."""
    unit = 4 * world_size
    out, s = [], 8
    while s <= max_bytes:
        out.append(max(unit, (s // unit) * unit))
        s *= STEP
    return sorted(set(out))


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw for a collective on `n` ranks: 2(n-1)/n for all-reduce, (n-1)/n otherwise."""
    return (2.0 if op == "all-reduce" else 1.0) * (n - 1) / n


def _collective(op: str, nbytes: int, rc: ranks.RankContext) -> tuple[Any, Any, Any]:
    """(call, input, output) for one op on nbytes (the S of the definitions above)."""
    import torch
    import torch.distributed as dist

    n = rc.world_size
    count = nbytes // 4
    chunk = count // n
    if op == "all-reduce":
        x = torch.empty(count, device=rc.device)
        return (lambda: dist.all_reduce(x)), x, x
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    if op == "all-gather":
        x, out = torch.empty(chunk, device=rc.device), torch.empty(count, device=rc.device)
        return (lambda: gather(out, x)), x, out
    x, out = torch.empty(count, device=rc.device), torch.empty(chunk, device=rc.device)
    return (lambda: scatter(out, x)), x, out


def _check(op: str, call: Any, x: Any, out: Any, rc: ranks.RankContext) -> float:
    """Largest error of one call against the exact answer (0.0 when right)."""
    import torch

    n, r = rc.world_size, rc.rank
    pattern = (torch.arange(x.numel(), device=rc.device) % 7 + 1).float()
    x.copy_(pattern * (r + 1))
    call()
    if op == "all-reduce":
        want = pattern * (n * (n + 1) / 2)
    elif op == "all-gather":
        chunk = x.numel()
        want = torch.cat([pattern * (k + 1) for k in range(n)])[: n * chunk]
    else:
        chunk = out.numel()
        want = (pattern * (n * (n + 1) / 2))[r * chunk : (r + 1) * chunk]
    return float((out - want).abs().max().item()) if out.numel() else 0.0


MIN_ITERS = 20  # timed iterations per size at least, after the warm-up (as nccl-tests run)
MAX_ITERS = 200
WARMUP = 5


def _time(call: Any, rc: ranks.RankContext, budget_s: float) -> dict[str, float]:
    """Per-iteration times of `call` after a warm-up: each iteration's time is the slowest rank's
    (a collective ends when its last rank does), then the median, min and max over iterations.
    The ranks agree on the count: at least MIN_ITERS, more while the budget lasts. On NCCL each
    iteration sits between two CUDA events on the collective's stream; on gloo, perf_counter.
    lo_s and hi_s bound the median (95%, order statistics: gpulab.core.interval)."""
    import torch
    import torch.distributed as dist

    for _ in range(WARMUP):
        call()
    rc.synchronize()
    t0 = time.perf_counter()
    call()
    rc.synchronize()
    one = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=rc.device)
    dist.all_reduce(one, op=dist.ReduceOp.MAX)
    iters = int(max(MIN_ITERS, min(MAX_ITERS, budget_s / max(float(one.item()), 1e-7))))
    dist.barrier()
    if rc.backend == "nccl":
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        marks[0].record()
        for k in range(iters):
            call()
            marks[k + 1].record()
        marks[-1].synchronize()
        each = [marks[k].elapsed_time(marks[k + 1]) / 1e3 for k in range(iters)]
    else:
        each = []
        for _ in range(iters):
            t0 = time.perf_counter()
            call()
            each.append(time.perf_counter() - t0)
    fig = ranks.slowest(rc, each)
    return {
        "time_s": fig["median"],
        "min_s": fig["min"],
        "max_s": fig["max"],
        "lo_s": fig["lo"],
        "hi_s": fig["hi"],
        "iters": iters,
    }


def _measure(op: str, nbytes: int, rc: ranks.RankContext, budget: float) -> dict[str, Any]:
    """One op at one size, checked then timed on every rank: its row (rank 0's is the one used)."""
    import torch
    import torch.distributed as dist

    call, x, out = _collective(op, nbytes, rc)
    err = torch.tensor([_check(op, call, x, out, rc)], device=rc.device)
    dist.all_reduce(err, op=dist.ReduceOp.MAX)  # every rank's error, on rank 0
    row: dict[str, Any] = {"op": op, "bytes": nbytes, "ranks": rc.world_size}
    row.update(_time(call, rc, budget))
    algbw = nbytes / row["time_s"] / 1e9
    busbw = algbw * bus_factor(op, rc.world_size)
    row.update({"algbw_gbs": algbw, "busbw_gbs": busbw, "error": float(err.item())})
    return row


def _budget(rc: ranks.RankContext) -> float:
    return 0.02 if rc.quick else 0.15


def rank_main(rc: ranks.RankContext, all_sizes: list[int]) -> list[dict[str, Any]]:
    """Every op on every size, checked then timed; rank 0 streams a row per (op, size)."""
    rows: list[dict[str, Any]] = []
    total = len(OPS) * len(all_sizes)
    for i, op in enumerate(OPS):
        for j, nbytes in enumerate(all_sizes):
            rc.progress((i * len(all_sizes) + j) / total, f"{op} {result_rows.size_label(nbytes)}")
            row = _measure(op, nbytes, rc, _budget(rc))
            rows.append(row)
            rc.measurement(to_measurement(row, rc.world_size, None))
    rc.progress(1.0, "done")
    return rows


def sweep_main(rc: ranks.RankContext, all_sizes: list[int]) -> dict[str, Any]:
    """The size sweep, then where a small all-reduce's time goes, on the same ranks."""
    rows = rank_main(rc, all_sizes)
    rc.progress(1.0, f"latency of a {result_rows.size_label(LATENCY_BYTES)} all-reduce")
    return {"rows": rows, "latency": collective_latency.measure(rc, LATENCY_BYTES)}


def scaling_main(rc: ranks.RankContext, nbytes: int) -> dict[str, Any]:
    """The all-reduce of nbytes alone on this many ranks: one point of busbw against ranks."""
    rc.progress(0.0, f"all-reduce {result_rows.size_label(nbytes)} on {rc.world_size} ranks")
    return _measure("all-reduce", nbytes, rc, _budget(rc))


def to_measurement(row: dict[str, Any], n: int, peer_gbs: float | None) -> Measurement:
    """A results row from one timed collective, judged against the GPUs' peer copy rate."""
    pct = 100.0 * row["busbw_gbs"] / peer_gbs if peer_gbs else None
    extra: dict[str, Any] = {"algbw_gbs": row["algbw_gbs"], "bytes": row["bytes"], "ranks": n}
    if pct is not None and pct > 100.0:
        extra["ceiling_note"] = NVLS_NOTE
    return Measurement(
        contender=row["op"],
        size=result_rows.size_label(row["bytes"]),
        time_median_s=row["time_s"],
        time_min_s=row.get("min_s", row["time_s"]),
        time_max_s=row.get("max_s", row["time_s"]),
        runs=row["iters"],
        dtype="fp32",
        throughput=row["busbw_gbs"],
        unit="GB/s",
        percent_of_peak=pct,
        peak_name="peer-copy bandwidth (p2p, this run)" if pct is not None else "",
        note=(
            f"the figure is busbw (algbw x {bus_factor(row['op'], n):.3g}); algbw is "
            f"{fmt_num(row['algbw_gbs'])} GB/s; {n} ranks, median of {row['iters']} iterations"
        ),
        extra=extra,
    )


def peer_copy_gbs(ctx: Context) -> float | None:
    """GPU 0 -> GPU 1 copy bandwidth at 256 MiB, measured now (None without two GPUs)."""
    if not ctx.has_cuda or ranks.gpu_count(ctx) < 2:
        return None

    return copy_bandwidth(0, 1, 256 * 2**20, peer=True)[0]


class AllReduce(Experiment):
    """The `allreduce` experiment: All-reduce, all-gather, reduce-scatter: algbw and busbw from 8
    B up, verified."""

    id = "allreduce"
    title = "All-reduce across GPUs (torch.distributed)"
    summary = "All-reduce, all-gather, reduce-scatter: algbw and busbw from 8 B up, verified."
    lesson = "collectives-and-topology"
    params = ParamSet(
        (
            Int(
                "ranks",
                0,
                "processes (one per GPU); 0: every GPU, or 2 on the CPU; the largest size also "
                "runs on 2 .. ranks-1",
                min=0,
                max=64,
            ),
            Int(
                "max_bytes",
                2**30,
                "largest message (CPU/gloo: at most 16 MiB)",
                unit="bytes",
                min=8,
                max=2**34,
            ),
        )
    )
    contenders = (
        Contender("nccl", "NCCL, one process per GPU", "torch-cuda"),
        Contender("gloo", "gloo on the CPU", "torch-cpu"),
    )
    bench_params = ({"ranks": 0, "max_bytes": 2**30},)
    bench_suites = ("multi-gpu",)  # not "full": a one-GPU machine cannot run it

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        """Refuse a rank count this machine cannot run before any process starts."""
        world_size(Context(inventory=inventory), params)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        result = self.new_result(ctx, params)
        n = world_size(ctx, params)
        cap = int(params["max_bytes"]) if ctx.has_cuda else min(CPU_MAX_BYTES, params["max_bytes"])
        cap = min(cap, QUICK_MAX_BYTES) if ctx.quick else cap
        result.unavailable.pop("gloo" if not ctx.has_cuda else "nccl", None)
        result.unavailable["nccl" if not ctx.has_cuda else "gloo"] = (
            "needs two or more GPUs (CPU mode runs gloo)" if not ctx.has_cuda else "NCCL runs here"
        )
        if ctx.has_cuda:
            fits.require_fit(ctx, cap * 3.2, f"all-reduce of {result_rows.size_label(cap)}")
        peer = peer_copy_gbs(ctx)
        ctx.log(f"{n} ranks, {ranks.backend_for(ctx)}, sizes 8 B .. {result_rows.size_label(cap)}")
        out = ranks.launch(ctx, sweep_main, n, (sizes(cap, n),))[0]
        rows = out["rows"]
        for r in rows:
            result.measurements.append(to_measurement(r, n, peer))
        top = max(r["bytes"] for r in rows)
        scaling = {n: next(r for r in rows if r["op"] == "all-reduce" and r["bytes"] == top)}
        for m in range(2, n):  # the largest all-reduce again on fewer ranks: busbw against ranks
            ctx.log(f"all-reduce of {result_rows.size_label(top)} on {m} ranks")
            scaling[m] = ranks.launch(ctx, scaling_main, m, (top,))[0]
            row = to_measurement(scaling[m], m, peer)
            row.size = f"{result_rows.size_label(top)}, {m} ranks"
            result_rows.emit(ctx, result, row)
        for op in OPS:
            mine = [r for r in rows if r["op"] == op]
            checked = mine + ([r for k, r in scaling.items() if k != n] if op == OPS[0] else [])
            result.verdicts.append(
                Verdict.check(
                    op,
                    max(r["error"] for r in checked),
                    0.0,
                    metric="largest error on any rank",
                    reference="the exact sum (small integers, exact in fp32)",
                    dtype="fp32",
                )
            )
            result.series.append(_busbw_series(f"{op} busbw", mine))
        model = ring_model.fit([(r["bytes"], r["time_s"]) for r in rows if r["op"] == OPS[0]], n)
        counts = sorted(scaling)
        if model:
            result.series.append(ring_model.size_series(model, sizes(cap, n), n))
        if len(counts) > 1:
            points = [scaling[m] for m in counts]
            busbw = _busbw_series(f"all-reduce busbw at {result_rows.size_label(top)}", points)
            busbw.x, busbw.x_label = [float(m) for m in counts], "ranks"
            busbw.log_x = busbw.log_y = False
            result.series.append(busbw)
            if model:
                result.series.append(ring_model.ranks_series(model, top, counts))
        latency = out["latency"]
        self._latency_rows(ctx, result, latency)
        largest = {r["op"]: r for r in rows if r["bytes"] == top}
        result.summary = {
            "ranks": n,
            "backend": ranks.backend_for(ctx),
            "largest_bytes": top,
            "busbw_gbs": {op: r["busbw_gbs"] for op, r in largest.items()},
            "algbw_gbs": {op: r["algbw_gbs"] for op, r in largest.items()},
            "busbw_by_ranks_gbs": {m: scaling[m]["busbw_gbs"] for m in counts},
            "latency_s": collective_latency.split(latency),
            "latency": collective_latency.words(latency, result_rows.size_label(LATENCY_BYTES)),
        }
        if model:
            fitted: dict[str, Any] = dict(model.to_dict())
            if peer:
                fitted["bandwidth_of_peer"] = model.bandwidth_bps / 1e9 / peer
            fitted["busbw_by_ranks_gbs"] = {m: model.busbw_gbs(top, m) for m in counts}
            result.summary["ring_model"] = fitted
        else:
            result.summary["ring_model"] = {"unavailable": NO_FIT}
        if peer:
            result.summary["peer_copy_gbs"] = peer
            result.summary["allreduce_of_peer"] = largest["all-reduce"]["busbw_gbs"] / peer
        result.explanation = EXPLANATION + (
            f" This run's fit: {ring_model.describe(model, peer)}." if model else ""
        )
        return self.finish(result)

    def _latency_rows(self, ctx: Context, result: Result, latency: dict[str, Any]) -> None:
        """A row for each part of a small all-reduce's time; a part with no figure here (gloo's
        graph) is listed as not run, with the reason."""
        size = result_rows.size_label(LATENCY_BYTES)
        for part, fig in latency.items():
            name = f"latency: {part}"
            if "unavailable" in fig:
                result.unavailable[name] = fig["unavailable"]
                continue
            lo, hi = fig["lo"], fig["hi"]
            m = Measurement(
                contender=name,
                size=size,
                time_median_s=fig["median"],
                time_min_s=fig["min"],
                time_max_s=fig["max"],
                runs=int(fig["n"]),
                note=(
                    f"{collective_latency.COMPONENTS[part]}; the slowest rank's per call, 95% "
                    f"interval of the median {fmt_time(lo)}..{fmt_time(hi)}"
                ),
                extra={"part": part, "interval_s": [lo, hi]},
            )
            result_rows.emit(ctx, result, m)

    def headline(self, result: Result) -> str:
        """One line: the all-reduce bus bandwidth at the largest size, its share of the GPUs'
        peer copy rate, and a small all-reduce's time with and without the host."""
        s = result.summary
        bus = (s.get("busbw_gbs") or {}).get("all-reduce")
        if bus is None:
            return ""
        text = (
            f"all-reduce on {s['ranks']} ranks ({s['backend']}) reached a busbw of {bus:.3g} GB/s "
            f"at {result_rows.size_label(s['largest_bytes'])}"
        )
        if s.get("allreduce_of_peer"):
            text += f", {s['allreduce_of_peer']:.0%} of the {s['peer_copy_gbs']:.3g} GB/s peer copy"
        parts = s.get("latency_s") or {}
        if parts:
            text += (
                f"; {result_rows.size_label(LATENCY_BYTES)} took "
                f"{fmt_time(parts['call and wait'])} per call from Python"
            )
            if "collective alone" in parts:
                text += f", {fmt_time(parts['collective alone'])} in a CUDA graph"
        return text


def _busbw_series(name: str, rows: list[dict[str, Any]]) -> Series:
    """busbw against message size, each point a median with its 95% interval."""

    def bus(row: dict[str, Any], seconds: float) -> float:
        return row["bytes"] / seconds / 1e9 * bus_factor(row["op"], row["ranks"])

    return Series(
        name,
        [float(r["bytes"]) for r in rows],
        [r["busbw_gbs"] for r in rows],
        x_label="message size (bytes)",
        y_label="busbw (GB/s)",
        log_x=True,
        log_y=True,  # from bytes to GiB the busbw spans many decades
        lo=[bus(r, r["hi_s"]) for r in rows],  # the slow end of the time: the low busbw
        hi=[bus(r, r["lo_s"]) for r in rows],
    )


def world_size(ctx: Context, params: dict[str, Any]) -> int:
    """The ranks asked for (0: every GPU, or 2 on the CPU), refused when this machine lacks them."""
    asked = int(params.get("ranks", 0))
    if ctx.has_cuda:
        gpus = ranks.gpu_count(ctx)
        n = asked or gpus
        if n < 2 or n > gpus:
            raise ExperimentError(
                f"ranks={n}: NCCL runs one process per GPU and this machine has {gpus} "
                f"GPU{'s' * (gpus != 1)}; a collective needs 2 or more"
            )
        return n
    n = asked or 2
    if n < 2 or n > ranks.max_world_size(ctx):
        raise ExperimentError(
            f"ranks={n}: on the CPU (gloo) use 2..{ranks.max_world_size(ctx)} ranks"
        )
    return n


EXPERIMENT = AllReduce()
