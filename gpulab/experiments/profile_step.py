"""Profile a step: a slow training step and its fix, under torch.profiler, side by side.

The slow step is the kind a profiler is for: it computes the loss one row of the batch at a
time (a Python loop: thousands of tiny kernels, forward and backward) and clips the gradients
by their global norm reading each parameter's norm back with `.item()` (a device sync per
parameter), then updates parameter by parameter. The fixed step does the same arithmetic on the
whole batch at once, keeps the norm on the device (`clip_grad_norm_`) and updates every
parameter with `torch._foreach_*` calls. Both start from the same weights and see the same
batches; the fixed step's losses and weights must equal the slow step's.

Measured per step, for both: device syncs and kernels (from the profiler's runtime and kernel
events), the top operators (a table that fits 80 columns), and the time per step (interleaved
rounds, synchronized wall time, median).
"""

from __future__ import annotations

from typing import Any

from gpulab.core import step_trace as st
from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Artifact, Measurement, Result, Verdict
from gpulab.experiments import fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.wording import duration

IN, OUT = 32, 8
LR, MOMENTUM, MAX_NORM = 0.05, 0.9, 1.0
PROFILED = 3  # steps under the profiler, per version
TOP = 6  # table rows per version


def make_weights(torch: Any, layers: int, width: int, device: Any, seed: int) -> list[Any]:
    """The MLP's parameters, [w1, b1, w2, b2, ...], the same for every version (seeded)."""
    g = torch.Generator().manual_seed(seed)
    sizes = [IN] + [width] * (layers - 1) + [OUT]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        w = (torch.rand(fan_out, fan_in, generator=g) * 2 - 1) / fan_in**0.5
        b = (torch.rand(fan_out, generator=g) * 2 - 1) * 0.1
        params += [w.to(device), b.to(device)]
    return [p.requires_grad_() for p in params]


def make_batches(torch: Any, n: int, batch: int, device: Any, seed: int) -> list[tuple[Any, Any]]:
    """`n` regression batches (x, y) whose targets sit well away from the first predictions, so
    the gradient norm is above MAX_NORM and the clipping matters."""
    g = torch.Generator().manual_seed(seed + 1)
    teacher = torch.randn(IN, OUT, generator=g) / IN**0.5
    out = []
    for _ in range(n):
        x = torch.randn(batch, IN, generator=g)
        y = 3.0 * torch.tanh(x @ teacher) + 2.0
        out.append((x.to(device), y.to(device)))
    return out


def forward(params: list[Any], x: Any) -> Any:
    import torch.nn.functional as F

    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def slow_step(params: list[Any], momenta: list[Any], x: Any, y: Any) -> Any:
    """The step a profiler is for: a loop over rows, an .item() per parameter."""
    import torch

    for p in params:
        p.grad = None
    loss = 0.0
    for i in range(x.shape[0]):
        loss = loss + ((forward(params, x[i : i + 1]) - y[i : i + 1]) ** 2).mean()
    loss = loss / x.shape[0]
    loss.backward()
    total = 0.0
    for p in params:
        total += p.grad.pow(2).sum().item()  # a device sync per parameter
    scale = min(1.0, MAX_NORM / (total**0.5 + 1e-6))
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad, alpha=scale)
            p.sub_(m, alpha=LR)
    return loss.detach()


def fast_step(params: list[Any], momenta: list[Any], x: Any, y: Any) -> Any:
    """The same arithmetic: the whole batch at once, the norm kept on the device, foreach."""
    import torch

    for p in params:
        p.grad = None
    loss = ((forward(params, x) - y) ** 2).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, MAX_NORM, foreach=True)
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()


VERSIONS = {"slow": slow_step, "fixed": fast_step}


class ProfileStep(Experiment):
    id = "profile-step"
    title = "Profiling a slow training step"
    summary = "A step with an .item() sync and a loop over rows, and its fix: syncs, kernels, time."
    lesson = "profiling-a-step"
    params = ParamSet(
        (
            Int("batch", 64, "rows per batch (the slow step loops over them)", min=1, max=4096),
            Int("width", 128, "hidden width of the MLP", min=8, max=4096),
            Int("layers", 4, "Linear layers", min=1, max=32),
            Int("rounds", 5, "timing rounds (interleaved: slow, fixed, slow, ...)", min=1, max=50),
        )
    )
    contenders = (
        Contender("slow", "loop over rows, .item() per parameter", "torch-cuda"),
        Contender("fixed", "whole batch, norm on the device, foreach update", "torch-cuda"),
        Contender("slow-cpu", "the slow step on the CPU", "torch-cpu"),
        Contender("fixed-cpu", "the fixed step on the CPU", "torch-cpu"),
    )
    bench_params = ({"batch": 64, "width": 128, "layers": 4},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        import torch

        result = self.new_result(ctx, params)
        gpu = bool(ctx.has_cuda)
        if gpu:
            result.unavailable.setdefault("slow-cpu", "the GPU ran the steps instead")
            result.unavailable.setdefault("fixed-cpu", "the GPU ran the steps instead")
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        batch, width, layers = int(params["batch"]), int(params["width"]), int(params["layers"])
        rounds = int(params["rounds"])
        n_params = IN * width + width * width * (layers - 2) + width * OUT if layers > 1 else 0
        need = 16 * 4 * (n_params + IN * OUT + 2 * width * layers) + 64 * batch * (IN + width)
        if gpu:
            fits.require_fit(ctx, need, f"profile-step with width {width}")
        size = f"batch {batch}, {layers} x {width}"
        per_round = 3
        n_batches = PROFILED + (rounds + 1) * per_round + 2
        batches = make_batches(torch, n_batches, batch, dev, 0)
        states: dict[str, tuple[Any, list[Any], list[Any]]] = {}
        for name in VERSIONS:
            ps = make_weights(torch, layers, width, dev, 0)
            states[name] = (ps, [torch.zeros_like(p) for p in ps], [])

        def runner(name: str) -> Any:
            fn = VERSIONS[name]
            ps, ms, losses = states[name]

            def one(i: int) -> None:
                x, y = batches[i % len(batches)]
                losses.append(fn(ps, ms, x, y))

            return one

        # Correctness first, on the same two batches from the same weights: then the weights
        # go on into the profiled and timed steps, each version on its own copy.
        ctx.progress(0.05, "two steps of each, compared")
        for name in VERSIONS:
            for i in range(2):
                runner(name)(i)
        slow_p, fast_p = states["slow"][0], states["fixed"][0]
        loss_err = max(
            abs(float(a) - float(b)) / max(1e-12, abs(float(a)))
            for a, b in zip(states["slow"][2], states["fixed"][2], strict=True)
        )
        w_err = max(
            float((a.detach() - b.detach()).abs().max() / a.detach().abs().max().clamp_min(1e-12))
            for a, b in zip(slow_p, fast_p, strict=True)
        )
        err = max(loss_err, w_err)
        result.verdicts.append(
            Verdict(
                contender="fixed" if gpu else "fixed-cpu",
                error=err,
                tolerance=1e-4,
                passed=err <= 1e-4,
                metric="largest relative difference in losses and weights after 2 steps",
                reference="the slow step, same weights and batches",
                size=size,
            )
        )
        traces: dict[str, st.StepTrace] = {}
        for j, name in enumerate(VERSIONS):
            ctx.progress(0.1 + 0.2 * j, f"profiling {PROFILED} {name} steps")
            one = runner(name)
            traces[name] = st.profile_steps(_shifted(one, 2), PROFILED, gpu=gpu, top=TOP)
        ctx.progress(0.5, f"timing, {rounds} interleaved rounds of {per_round} steps")
        offset = 2 + PROFILED
        timed = st.time_steps(
            {name: _shifted(runner(name), offset) for name in VERSIONS},
            gpu=gpu,
            rounds=rounds,
            per_round=per_round,
        )
        for name, trace in traces.items():
            t = timed[name]
            cid = name if gpu else f"{name}-cpu"
            if gpu:
                note = f"{trace.syncs:.3g} syncs, {trace.kernels:,.0f} kernels per step"
            else:
                note = f"{trace.readbacks:.3g} readbacks, {trace.ops:,.0f} ops per step"
            result_rows.emit(
                ctx,
                result,
                Measurement(
                    contender=cid,
                    size=size,
                    time_median_s=t["median_s"],
                    time_min_s=t["min_s"],
                    time_max_s=t["max_s"],
                    runs=rounds,
                    dtype="fp32",
                    throughput=1.0 / t["median_s"],
                    unit="steps/s",
                    note=note,
                    extra={"trace": trace.to_dict()},
                ),
            )
        lines = []
        for name, trace in traces.items():
            lines += [f"{name} step", f"  {st.summary_line(trace)}", *st.table(trace), ""]
        result.artifacts.append(Artifact("profile", "text", text="\n".join(lines).rstrip()))
        for line in lines:
            ctx.log(line)
        s, f = timed["slow"]["median_s"], timed["fixed"]["median_s"]
        result.summary = {
            "gpu": gpu,
            "step_s": {"slow": s, "fixed": f},
            "speedup": s / f if f > 0 else None,
            "syncs_per_step": {k: v.syncs for k, v in traces.items()},
            "readbacks_per_step": {k: v.readbacks for k, v in traces.items()},
            "kernels_per_step": {k: v.kernels for k, v in traces.items()},
            "ops_per_step": {k: v.ops for k, v in traces.items()},
            "max_rel_error": err,
        }
        ctx.progress(1.0, "done")
        result.explanation = (
            "Read the slow step's table from the top: on a GPU, aten::item, "
            "aten::_local_scalar_dense and cudaStreamSynchronize rows are device syncs (the "
            "host stops until the GPU has drained its queue, once per parameter here), and a "
            "kernel count in the thousands for a model this small means the step is "
            "launch-bound: the Python loop over rows issues the same few tiny kernels again "
            "for every row, forward and backward, and the GPU idles between them. The fixed "
            "step does the same arithmetic on the whole batch, keeps the gradient norm on the "
            "device (clip_grad_norm_ multiplies by a clamped tensor instead of branching on a "
            "Python number) and updates all parameters with a few foreach kernels."
        )
        if not gpu:
            result.explanation += (
                " Here the CPU ran both steps: nothing waits for a device, so the table counts "
                "readbacks (each a device sync on a GPU) and operators (each at least one "
                "kernel launch on a GPU) instead of syncs and kernels."
            )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        s = result.summary
        if not s.get("speedup"):
            return ""
        t = s["step_s"]
        if s.get("gpu"):
            sy, k = s["syncs_per_step"], s["kernels_per_step"]
            return (
                f"the fixed step took {duration(t['fixed'])} against {duration(t['slow'])} "
                f"({s['speedup']:.1f}x): {sy['slow']:.0f} -> {sy['fixed']:.0f} syncs, "
                f"{k['slow']:,.0f} -> {k['fixed']:,.0f} kernels per step"
            )
        o = s["ops_per_step"]
        return (
            f"on the CPU the fixed step took {duration(t['fixed'])} against "
            f"{duration(t['slow'])} ({s['speedup']:.1f}x): {o['slow']:,.0f} -> "
            f"{o['fixed']:,.0f} operators per step"
        )


EXPERIMENT = ProfileStep()


def _shifted(step: Any, offset: int) -> Any:
    """Step `i` of a profile or timing run is the version's step `offset + i` (fresh batches)."""

    def call(i: int) -> Any:
        return step(offset + i)

    return call
