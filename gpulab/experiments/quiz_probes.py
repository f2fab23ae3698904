"""`quiz-measure`: the small measurements a lesson's measured quiz question is graded by.

A measured question (a quiz question with `measure:` in its lesson's front matter) asks the
learner to predict a figure of their own machine, then submits this hidden job with the
question's probe; the figure it returns picks the right choice (gpulab.lessons.lesson_format,
`Measure.judge`), so the grade follows this device, not a key written on another. Each probe
runs on the GPU with PyTorch where there is one, else on the CPU, and says which (`on`): where
the CPU has no counterpart of the GPU's part (a copy over PCIe), the probe times the CPU's own
stand-in and says so in its words.

Every probe takes well under a second or two of timing: a quiz must not wait long (the
all-reduce probe also starts two ranks, a few seconds the first time). Importing this module
imports no torch; it registers the job (`register_hidden`), so the worker and a front end
that submits it (the quiz screen) import it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulab.core import ranks
from gpulab.core.params import Choice, ParamSet
from gpulab.core.results import Measurement, Result
from gpulab.core.timing import Timing
from gpulab.experiments.base import Context, Experiment
from gpulab.experiments.collective_latency import per_call_main
from gpulab.experiments.registry import register_hidden
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import duration, times

EXPERIMENT_ID = "quiz-measure"
BUDGET_S = 0.3  # per timed contender: a quiz waits for at most a few of them
MIB = 1 << 20


@dataclass(frozen=True)
class Reading:
    """What a probe measured: the figure a question's bounds are read against, the same in
    words, and the rows it timed."""

    figure: float
    words: str
    rows: list[Measurement]
    on: str = ""  # "CPU" where a GPU machine's probe ran on the CPU (one GPU: no NCCL pair)


def _time(ctx: Context, fn: Callable[[], Any], *, inner: int = 1) -> Timing:
    return ctx.timer.measure(
        fn, sync="torch" if ctx.has_cuda else "none", budget_s=BUDGET_S, inner=inner
    )


def copy_vs_compute(ctx: Context) -> Reading:
    """A 16 MiB chunk's copy to the device (pinned memory; on the CPU, a host copy stands in)
    against an elementwise step on it: copy time / compute time."""
    import torch  # deferred: the registry is imported where torch must not be

    n = 16 * MIB // 4
    dev = ctx.torch_device
    if ctx.has_cuda:
        src = torch.rand(n).pin_memory()
        copy_what = "pinned host to GPU"
    else:
        src = torch.rand(n)
        copy_what = "a host copy, standing in for the copy to a GPU"
    dst = torch.empty(n, device=dev)
    x = torch.rand(n, device=dev)
    copy = _time(ctx, lambda: dst.copy_(src, non_blocking=True))
    compute = _time(ctx, lambda: torch.tanh(x * 2.0 + 1.0))
    ratio = copy.median_s / compute.median_s
    words = (
        f"copy {duration(copy.median_s)} ({copy_what}), compute {duration(compute.median_s)}: "
        f"the copy takes {times(ratio)} the compute"
    )
    rows = [row("copy", "16 MiB", copy), row("compute", "16 MiB", compute)]
    return Reading(ratio, words, rows)


def launch_cost(ctx: Context) -> Reading:
    """The time per tiny `x.add_(1)` issued back to back from Python, the host's work included
    (on a GPU, each is a kernel launch): microseconds per call."""
    import torch  # deferred: see copy_vs_compute

    calls = 1000
    x = torch.zeros(1, device=ctx.torch_device)

    def burst() -> None:
        for _ in range(calls):
            x.add_(1.0)

    timing = _time(ctx, burst)
    per_us = timing.median_s / calls * 1e6
    words = f"{per_us:.3g} us per call, {calls} calls in {duration(timing.median_s)}"
    return Reading(per_us, words, [row("x.add_(1)", f"{calls} calls", timing)])


def sum_vs_copy(ctx: Context) -> Reading:
    """torch.sum of float32 (256 MiB on a GPU, beyond its L2; 64 MiB on a CPU) against a copy of
    it, in bytes moved per second (the sum reads them; the copy reads and writes them): the sum's
    rate over the copy's."""
    import torch  # deferred: see copy_vs_compute

    nbytes = (256 if ctx.has_cuda else 64) * MIB
    size = f"{nbytes // MIB} MiB"
    x = torch.rand(nbytes // 4, device=ctx.torch_device)
    dst = torch.empty_like(x)
    total = _time(ctx, lambda: torch.sum(x))
    copy = _time(ctx, lambda: dst.copy_(x))
    sum_rate, copy_rate = nbytes / total.median_s, 2 * nbytes / copy.median_s
    ratio = sum_rate / copy_rate
    words = (
        f"sum {sum_rate / 1e9:.3g} GB/s, copy {copy_rate / 1e9:.3g} GB/s: the sum moves bytes "
        f"at {times(ratio)} the copy's rate"
    )
    rows = [
        row("torch.sum", size, total, work=nbytes, unit="GB/s", scale=1e9),
        row("copy", size, copy, work=2 * nbytes, unit="GB/s", scale=1e9),
    ]
    return Reading(ratio, words, rows)


def softmax_fusion(ctx: Context) -> Reading:
    """Row softmax as five eager ops (max, subtract, exp, sum, divide) against torch.softmax,
    one fused kernel, on float32 (8192 x 4096 on a GPU, beyond its L2; 2048 x 2048 on a CPU):
    eager time / fused time."""
    import torch  # deferred: see copy_vs_compute

    shape = (8192, 4096) if ctx.has_cuda else (2048, 2048)
    size = f"{shape[0]}x{shape[1]}"
    x = torch.randn(*shape, device=ctx.torch_device)

    def eager() -> Any:
        m = x.max(dim=1, keepdim=True).values
        e = torch.exp(x - m)
        return e / e.sum(dim=1, keepdim=True)

    five = _time(ctx, eager)
    fused = _time(ctx, lambda: torch.softmax(x, dim=1))
    ratio = five.median_s / fused.median_s
    words = (
        f"five ops {duration(five.median_s)}, fused {duration(fused.median_s)}: the eager "
        f"softmax takes {times(ratio)} the fused one"
    )
    rows = [
        row("softmax, 5 eager ops", size, five),
        row("torch.softmax", size, fused),
    ]
    return Reading(ratio, words, rows)


def chain_headroom(ctx: Context) -> Reading:
    """The lesson's elementwise chain(x, w, b) run eagerly against one kernel that moves what the
    fused chain must (torch.addcmul: reads x, w and b, writes once), on 64M floats on a GPU and
    4M on a CPU: chain time / that time."""
    import torch  # deferred: see copy_vs_compute

    # deferred: another experiment's module, loaded when its chain is timed
    from gpulab.experiments.torch_compile import chain

    n = (64 if ctx.has_cuda else 4) * MIB  # the lesson's table has 64M on a GPU
    size = f"{n // MIB}M floats"
    x, w, b = (torch.randn(n, device=ctx.torch_device) for _ in range(3))
    out = torch.empty_like(x)
    eager = _time(ctx, lambda: chain(x, w, b))
    one = _time(ctx, lambda: torch.addcmul(b, x, w, out=out))
    ratio = eager.median_s / one.median_s
    words = (
        f"the eager chain {duration(eager.median_s)}, one kernel moving the same bytes "
        f"{duration(one.median_s)}: fusing could save up to {times(ratio)}"
    )
    rows = [row("chain, eager", size, eager), row("addcmul", size, one)]
    return Reading(ratio, words, rows)


def row_loop(ctx: Context) -> Reading:
    """profile-step's slow step (a loop over 32 rows, an .item() per parameter) against its fixed
    step on the same batch: slow time / fixed time."""
    import torch  # deferred: see copy_vs_compute

    # deferred: another experiment's module, loaded when its steps are timed
    from gpulab.experiments.profile_step import fast_step, make_batches, make_weights, slow_step

    dev = ctx.torch_device
    params = make_weights(torch, 3, 64, dev, seed=0)
    momenta = [torch.zeros_like(p) for p in params]
    ((x, y),) = make_batches(torch, 1, 32, dev, seed=0)
    slow = _time(ctx, lambda: slow_step(params, momenta, x, y))
    fixed = _time(ctx, lambda: fast_step(params, momenta, x, y))
    ratio = slow.median_s / fixed.median_s
    words = (
        f"the loop over rows {duration(slow.median_s)}, the batched step "
        f"{duration(fixed.median_s)}: {times(ratio)} slower"
    )
    return Reading(ratio, words, [row("slow", "32 rows", slow), row("fixed", "32 rows", fixed)])


def atomic_order(ctx: Context) -> Reading:
    """index_add_ of 1M float32 values into 1024 bins, five times on the same input: how many
    different results (bit for bit) the five runs gave."""
    import torch  # deferred: see copy_vs_compute

    runs, n = 5, 1 << 20
    g = torch.Generator().manual_seed(0)
    values = torch.rand(n, generator=g).to(ctx.torch_device)
    index = torch.randint(0, 1024, (n,), generator=g).to(ctx.torch_device)
    results: list[Any] = []
    t0 = time.perf_counter()
    for _ in range(runs):
        ctx.check_cancelled()
        out = torch.zeros(1024, device=ctx.torch_device)
        out.index_add_(0, index, values)
        results.append(out.cpu())
    seconds = (time.perf_counter() - t0) / runs
    distinct: list[Any] = []
    for r in results:
        if not any(torch.equal(r, d) for d in distinct):
            distinct.append(r)
    words = (
        f"{len(distinct)} different results in {runs} runs"
        if len(distinct) > 1
        else f"the same bits in all {runs} runs"
    )
    timing = Timing(seconds, seconds, seconds, runs, None, "perf_counter")
    return Reading(float(len(distinct)), words, [row("index_add_", "1M values", timing)])


ALLREDUCE_BYTES = 16
ALLREDUCE_CALLS = 100


def allreduce_latency(ctx: Context) -> Reading:
    """A 16 B all-reduce between two ranks, called from Python and waited for each time: NCCL on
    two GPUs where there are two, else gloo on the CPU. Microseconds per call, the slower rank's
    median."""
    nccl = ctx.has_cuda and ranks.gpu_count(ctx) >= 2
    backend = "nccl" if nccl else "gloo"
    fig = ranks.launch(ctx, per_call_main, 2, (ALLREDUCE_BYTES, ALLREDUCE_CALLS), backend=backend)[
        0
    ]
    per_us = float(fig["median"]) * 1e6
    where = "two GPUs over NCCL" if nccl else "two CPU processes over gloo"
    words = f"{per_us:.3g} us per call between {where}, the host waiting for each"
    timing = Timing(fig["median"], fig["min"], fig["max"], int(fig["n"]), None, "perf_counter")
    size = f"{ALLREDUCE_BYTES} B"
    return Reading(
        per_us, words, [row(f"all-reduce ({backend})", size, timing)], "" if nccl else "CPU"
    )


# probe -> (what it measures, its function); a lesson's `measure: {probe: ...}` names one
PROBES: dict[str, tuple[str, Callable[[Context], Reading]]] = {
    "copy-vs-compute": ("a 16 MiB copy's time over an elementwise step's", copy_vs_compute),
    "launch-cost": ("microseconds per tiny op issued from Python", launch_cost),
    "sum-vs-copy": ("torch.sum's GB/s over a copy's", sum_vs_copy),
    "softmax-fusion": ("five-op softmax time over torch.softmax's", softmax_fusion),
    "chain-headroom": ("an eager elementwise chain's time over one pass", chain_headroom),
    "row-loop": ("a loop over rows' step time over the batched step's", row_loop),
    "atomic-order": ("different index_add_ results in five runs", atomic_order),
    "allreduce-latency": ("microseconds per 16 B all-reduce between two ranks", allreduce_latency),
}


class QuizMeasure(Experiment):
    """The hidden job a measured quiz question submits: one probe, on this device."""

    id = EXPERIMENT_ID
    title = "Quiz measurement"
    summary = "Measures the figure a lesson's measured quiz question is graded by"
    params = ParamSet((Choice("probe", "launch-cost", tuple(PROBES), "what to measure"),))

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the probe; the summary holds its figure, its words and the device it ran on."""
        name = params["probe"]
        ctx.progress(0.0, f"measuring {PROBES[name][0]}")
        reading = PROBES[name][1](ctx)
        result = self.new_result(ctx, params)
        for r in reading.rows:
            ctx.measurement(r)
        result.measurements = list(reading.rows)
        on = reading.on or ("GPU" if ctx.has_cuda else "CPU")
        device = ctx.device_name() if on == "GPU" else ctx.cpu_name()
        # "CPU (x86_64, 2 cores)" names itself; a GPU's name does not say it is one
        where = device if device.startswith(on) else f"the {on} {device}".rstrip()
        result.summary.update(
            probe=name, figure=reading.figure, words=reading.words, on=on, device=device,
            where=where,
        )  # fmt: skip
        result.headline = f"on {where}: {reading.words}"
        return self.finish(result)


EXPERIMENT = QuizMeasure()
register_hidden(EXPERIMENT)
