"""DistributedDataParallel scaling: one model trained on 1, 2, ..., N ranks (one per GPU).

Two phases at each world size, both through torch.distributed (NCCL on GPUs, gloo on the CPU):

1. Same math: a fixed global batch split over the ranks. DDP averages the gradients, so every
   world size takes the same steps: the loss curves must agree (within fp32 rounding of a
   different summation order). Any difference beyond that is a bug (a rank seeing the wrong
   slice of data, a missing all-reduce).
2. Speed (weak scaling, as DDP is used): a fixed batch per rank, so N ranks do N times the work
   per step. samples/s at N over N x samples/s at 1 is the scaling efficiency. A communication
   hook on DDP times each gradient bucket's all-reduce, from launch to completion (on NCCL the
   completion is when the work is queued on the stream, so there the exposed time is the
   better figure); the compute alone is timed with `no_sync()` (no all-reduce), and what a step
   takes beyond it is communication the backward pass did not hide.
"""

from __future__ import annotations

import time
from typing import Any

from gpulab.core import ranks
from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Measurement, Result, Series, Verdict
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError

WARMUP_STEPS = 3
LOSS_RTOL = 1e-3  # fp32, a different order of the gradient sum per world size
CHECK_BATCH = 32  # the global batch of the same-math phase (split over the ranks)
DIM = 64


def _model(hidden: int, layers: int, device: str) -> Any:
    import torch

    torch.manual_seed(0)  # every rank starts from the same weights (DDP broadcasts rank 0's too)
    mods: list[Any] = []
    width = DIM
    for _ in range(layers):
        mods += [torch.nn.Linear(width, hidden), torch.nn.ReLU()]
        width = hidden
    mods.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*mods).to(device)


def _data(n: int, device: str) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, DIM, generator=g)
    y = (x[:, :8].sum(dim=1, keepdim=True)).sin()
    return x.to(device), y.to(device)


def rank_main(rc: ranks.RankContext, cfg: dict[str, Any]) -> dict[str, Any]:
    """One rank's training run under DDP: its timings, loss curve and communication time."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.backends.cuda.matmul.allow_tf32 = False  # the loss curves are compared in fp32
    torch.backends.cudnn.allow_tf32 = False
    n, r = rc.world_size, rc.rank
    ids = [r] if rc.backend == "nccl" else None
    comm: list[float] = []

    # No annotations: DDP checks a hook's (and rejects anything but dist.GradBucket).
    def timed_allreduce(state, bucket):
        t0 = time.perf_counter()
        buf = bucket.buffer().div_(n)
        fut = dist.all_reduce(buf, async_op=True).get_future()

        def done(f: Any) -> Any:
            comm.append(time.perf_counter() - t0)
            return f.value()[0]

        return fut.then(done)

    # Phase 1: the same global batch on every world size.
    model = DDP(_model(cfg["hidden"], cfg["layers"], rc.device), device_ids=ids)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = _data(CHECK_BATCH * cfg["check_steps"], rc.device)
    per = CHECK_BATCH // n
    losses = []
    for s in range(cfg["check_steps"]):
        lo = s * CHECK_BATCH + r * per
        loss = torch.nn.functional.mse_loss(model(x[lo : lo + per]), y[lo : lo + per])
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(float(mean.item()) / n)
        rc.progress(0.3 * (s + 1) / cfg["check_steps"], f"{n} ranks: same-math step {s + 1}")
    # Phase 2: a fixed batch per rank, timed; then the compute alone (no_sync: no all-reduce).
    model = DDP(_model(cfg["hidden"], cfg["layers"], rc.device), device_ids=ids)
    model.register_comm_hook(None, timed_allreduce)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    b = cfg["batch"]
    x, y = _data(b * 4, rc.device)
    xb, yb = x[(r % 4) * b : (r % 4 + 1) * b], y[(r % 4) * b : (r % 4 + 1) * b]

    def step() -> None:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def timed(steps: int, fraction: float, what: str) -> dict[str, float]:
        """Median, min and max seconds a step, each step's time the slowest rank's, after a
        warm-up (buckets built, kernels loaded, the allocator settled). On NCCL each step sits
        between two CUDA events (no host wait between steps); on gloo, perf_counter."""
        for _ in range(WARMUP_STEPS):
            step()
        rc.synchronize()
        dist.barrier()
        comm.clear()  # the hook's timings of the timed steps only
        each = []
        if rc.backend == "nccl":
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
            marks[0].record()
            for s in range(steps):
                step()
                marks[s + 1].record()
                rc.progress(fraction + 0.35 * (s + 1) / steps, f"{n} ranks: {what}")
            marks[-1].synchronize()
            each = [marks[k].elapsed_time(marks[k + 1]) / 1e3 for k in range(steps)]
        else:
            for s in range(steps):
                t0 = time.perf_counter()
                step()
                each.append(time.perf_counter() - t0)
                rc.progress(fraction + 0.35 * (s + 1) / steps, f"{n} ranks: {what}")
        return ranks.slowest(rc, each)  # step by step, the slowest rank sets the pace

    stats = timed(cfg["steps"], 0.3, "timed steps")
    hooked = list(comm)
    with model.no_sync():
        compute = timed(cfg["steps"], 0.65, "compute only (no_sync)")
    step_s, compute_s = stats["median"], compute["median"]
    grads = sum(p.numel() for p in model.parameters()) * 4
    per_step = len(hooked) / cfg["steps"]
    return {
        "losses": losses,
        "step_s": step_s,
        "step_min_s": stats["min"],
        "step_max_s": stats["max"],
        "step_lo_s": stats["lo"],
        "step_hi_s": stats["hi"],
        "compute_s": compute_s,
        "allreduce_s": sum(hooked) / cfg["steps"],
        "buckets_per_step": per_step,
        "grad_bytes": grads,
    }


class DDPScaling(Experiment):
    """The `ddp-scaling` experiment: One model on 1..N ranks with DistributedDataParallel:
    samples/s, efficiency, comm."""

    id = "ddp-scaling"
    title = "Data-parallel training across GPUs (DDP)"
    summary = "One model on 1..N ranks with DistributedDataParallel: samples/s, efficiency, comm."
    lesson = "many-gpus"
    params = ParamSet(
        (
            Int("max_ranks", 0, "largest world size; 0: every GPU, or 2 on the CPU", min=0, max=64),
            Int("hidden", 0, "hidden width; 0: 4096 on GPUs, 256 on the CPU", min=0, max=65536),
            Int("layers", 4, "hidden layers", min=1, max=64),
            Int("batch", 0, "samples per rank per step; 0: 2048 on GPUs, 64 on the CPU", min=0),
            Int("steps", 0, "timed steps per world size; 0: 30 on GPUs, 20 on the CPU", min=0),
        )
    )
    contenders = (
        Contender("nccl", "DDP over NCCL, one process per GPU", "torch-cuda"),
        Contender("gloo", "DDP over gloo on the CPU", "torch-cpu"),
    )
    bench_params = ({"max_ranks": 0},)
    bench_suites = ("multi-gpu",)  # not "full": a one-GPU machine cannot run it

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        """Refuse a rank count this machine cannot run (or one that does not divide the batch)."""
        self.world_sizes(Context(inventory=inventory), params)

    def world_sizes(self, ctx: Context, params: dict[str, Any]) -> list[int]:
        """The rank counts to run (1, 2, 4, ... up to the most); ParamError when max_ranks cannot
        run here."""
        top = int(params.get("max_ranks") or 0)
        most = ranks.gpu_count(ctx) if ctx.has_cuda else ranks.max_world_size(ctx)
        top = top or (most if ctx.has_cuda else 2)
        if top > most or CHECK_BATCH % top:
            raise ExperimentError(
                f"max_ranks={top}: this machine runs 1..{most} ranks "
                f"({'one per GPU' if ctx.has_cuda else 'gloo on the CPU'}), and {CHECK_BATCH} "
                "(the same-math batch) must split evenly"
            )
        return list(range(1, top + 1))

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        result = self.new_result(ctx, params)
        gpu = ctx.has_cuda
        cfg = {
            "hidden": params["hidden"] or (4096 if gpu else 256),
            "layers": int(params["layers"]),
            "batch": params["batch"] or (2048 if gpu else 64),
            "steps": params["steps"] or (30 if gpu else 20),
            "check_steps": 10,
        }
        if ctx.quick:
            cfg.update(hidden=min(cfg["hidden"], 32), steps=min(cfg["steps"], 3), check_steps=4)
        result.unavailable.pop("gloo", None)
        if gpu:
            result.unavailable["gloo"] = "GPUs here: DDP runs on NCCL"
        runs: dict[int, dict[str, Any]] = {}
        for n in self.world_sizes(ctx, params):
            ctx.log(f"world size {n}")
            runs[n] = ranks.launch(ctx, rank_main, n, (cfg,))[0]
        base = runs[1]
        one = cfg["batch"] / base["step_s"]
        worst = 0.0
        for n, out in runs.items():
            rate = n * cfg["batch"] / out["step_s"]
            eff = rate / (n * one)
            diff = max(
                abs(a - b) / max(abs(b), 1e-12)
                for a, b in zip(out["losses"], base["losses"], strict=True)
            )
            worst = max(worst, diff)
            exposed = max(0.0, out["step_s"] - out["compute_s"])
            m = Measurement(
                contender="nccl" if gpu else "gloo",
                size=f"{n} ranks",
                time_median_s=out["step_s"],
                time_min_s=out.get("step_min_s", out["step_s"]),
                time_max_s=out.get("step_max_s", out["step_s"]),
                runs=cfg["steps"],
                dtype="fp32",
                throughput=rate,
                unit="samples/s",
                note=f"efficiency {eff:.0%}; exposed comm {exposed * 1e3:.3g} ms a step",
                extra={
                    "efficiency": eff,
                    "compute_s": out["compute_s"],
                    "exposed_comm_s": exposed,
                    "allreduce_s": out["allreduce_s"],
                    "buckets_per_step": out["buckets_per_step"],
                    "loss_rel_diff": diff,
                },
            )
            ctx.measurement(m)
            result.measurements.append(m)
            result.series.append(
                Series(
                    f"loss, {n} ranks",
                    [float(i) for i in range(len(out["losses"]))],
                    out["losses"],
                    x_label="step",
                    y_label="loss",
                )
            )
        result.series += rate_series(runs, cfg["batch"])
        result.verdicts.append(
            Verdict.check(
                "loss curves",
                worst,
                LOSS_RTOL,
                metric="largest relative difference from 1 rank's loss",
                reference="the same global batch on 1 rank",
                dtype="fp32",
            )
        )
        sizes = sorted(runs)
        effs = {n: m.extra["efficiency"] for n, m in zip(sizes, result.measurements, strict=True)}
        result.summary = {
            "backend": ranks.backend_for(ctx),
            "world_sizes": sizes,
            "samples_per_s": {
                n: m.throughput for n, m in zip(sizes, result.measurements, strict=True)
            },
            "efficiency": effs,
            "efficiency_at_max": effs[sizes[-1]],
            "grad_bytes": base["grad_bytes"],
            "model": {k: cfg[k] for k in ("hidden", "layers", "batch")},
        }
        result.explanation = (
            "Every rank holds the whole model and its own slice of the data; after each backward "
            "pass DDP all-reduces the gradients, in buckets that start while the backward pass "
            "is still running, so most of the communication hides behind compute. Because the "
            "gradients are averaged, N ranks with a global batch split N ways take exactly the "
            "steps one rank would: the loss curves match. Efficiency falls when the all-reduce "
            "of every gradient byte takes longer than the backward pass it overlaps (a small "
            "model, slow links, or gloo on a loaded CPU)."
        )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: samples/s and scaling efficiency at the most ranks, and whether the loss
        curves matched one rank's."""
        s = result.summary
        sizes = s.get("world_sizes") or []
        if len(sizes) < 2:
            return ""
        n = sizes[-1]
        return (
            f"DDP on {n} ranks ({s['backend']}) trained at {s['efficiency_at_max']:.0%} scaling "
            f"efficiency ({s['samples_per_s'][n]:.3g} samples/s), loss curves matching 1 rank"
        )


def rate_series(runs: dict[int, dict[str, Any]], batch: int) -> list[Series]:
    """samples/s against ranks, each point the median step with its 95% interval, beside what
    perfect scaling from one rank would give (n x one rank's rate)."""
    counts = sorted(runs)
    one = batch / runs[counts[0]]["step_s"] / counts[0]

    def rate(n: int, key: str) -> float:
        return n * batch / runs[n].get(key, runs[n]["step_s"])

    xs = [float(n) for n in counts]
    return [
        Series(
            "samples/s",
            xs,
            [rate(n, "step_s") for n in counts],
            x_label="ranks",
            y_label="samples/s",
            lo=[rate(n, "step_hi_s") for n in counts],  # the slow end of the step: fewer samples
            hi=[rate(n, "step_lo_s") for n in counts],
        ),
        Series(
            "perfect scaling (n x 1 rank)",
            xs,
            [n * one for n in counts],
            x_label="ranks",
            y_label="samples/s",
            model=True,
        ),
    ]


EXPERIMENT = DDPScaling()
