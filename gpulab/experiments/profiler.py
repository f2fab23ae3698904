"""Profiler: torch.profiler's table of a small training step, top operators by device time.

The step is a real one (forward, loss, backward on parameters that require grad, optimizer
step), unlike the seed's, which called backward on tensors that did not require grad and
crashed. Two steps run unprofiled first so one-time costs (cuBLAS handles, allocator growth)
stay out of the table.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Artifact, Measurement, Result, Verdict
from gpulab.experiments import syllabus_support as sup
from gpulab.experiments.base import Contender, Context, Experiment

TOP = 12
ANNOTATIONS = ("forward", "loss", "backward", "optimizer")
PROFILER_INTERNALS = ("Activity Buffer Request",)  # the profiler's own bookkeeping


def fit_bytes(hidden: int, batch: int) -> int:
    """Memory of the profiled steps: the weights and their gradients (2 fp32 copies of
    2 hidden^2 + 12 hidden + 10 parameters), the input, the activations kept for backward
    (two Linear and two ReLU outputs) and a few activation-sized gradients in flight; plus
    cuBLAS's workspace and the allocator's rounding (a fixed allowance)."""
    params = 2 * hidden * hidden + 12 * hidden + 10
    acts = 4 * batch * hidden * (1 + 4 + 3) + 4 * batch * 10 * 3 + 8 * batch
    return int((2 * 4 * params + acts) * 1.1) + sup.SLACK_BYTES


def _device_total(evt: Any) -> float:
    """Self device time in microseconds (the attribute was renamed from *_cuda_* in torch 2.4)."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(evt, name, None)
        if value is not None:
            return float(value)
    return 0.0


class Profiler(Experiment):
    id = "profiler"
    title = "Profiling a training step"
    summary = "torch.profiler on forward, loss, backward and step: where the time goes."
    lesson = "profiling"
    params = ParamSet(
        (
            Int("steps", 5, "training steps to profile", min=1, max=1000),
            Int(
                "hidden",
                2048,
                "hidden width of the MLP (capped at 512 on the CPU)",
                min=8,
                max=32768,
            ),
            Int("batch", 512, "batch size", min=1, max=65536),
        )
    )
    contenders = (
        Contender("torch", "PyTorch GPU (CUDA activity)", "torch-cuda"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
    )
    bench_params = ({"steps": 5},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        result = self.new_result(ctx, params)
        gpu = ctx.has_cuda
        if gpu:
            result.unavailable["torch-cpu"] = "the GPU was profiled instead"
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        steps, batch = int(params["steps"]), int(params["batch"])
        hidden = int(params["hidden"]) if gpu else min(int(params["hidden"]), 512)
        what = f"profiler with hidden={hidden}, batch={batch}"
        need = fit_bytes(hidden, batch)
        if gpu:
            sup.require_fit(ctx, need, what)
        else:
            sup.require_host_fit(need - sup.SLACK_BYTES + sup.HOST_SLACK_BYTES, what)
        model = torch.nn.Sequential(  # made on the device: never a host copy of the weights
            torch.nn.Linear(hidden, hidden, device=dev),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden, device=dev),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, 10, device=dev),
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(batch, hidden, device=dev)
        target = torch.randint(0, 10, (batch,), device=dev)

        def step() -> Any:
            with record_function(ANNOTATIONS[0]):
                logits = model(x)
            with record_function(ANNOTATIONS[1]):
                loss = torch.nn.functional.cross_entropy(logits, target)
            with record_function(ANNOTATIONS[2]):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with record_function(ANNOTATIONS[3]):
                opt.step()
            return loss

        ctx.progress(0.05, "warm-up steps")
        for _ in range(2):
            step()
        if gpu:
            torch.cuda.synchronize(dev)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
        losses = []
        with profile(activities=activities, record_shapes=False) as prof:
            for i in range(steps):
                ctx.progress(0.1 + 0.7 * i / steps, f"profiled step {i + 1} of {steps}")
                losses.append(step().detach())
            if gpu:
                torch.cuda.synchronize(dev)
        ctx.progress(0.85, "building the table")
        missing = sum(1 for p in model.parameters() if p.grad is None)
        result.verdicts.append(
            Verdict.check(
                "gradients",
                float(missing),
                0.0,
                metric="parameters without a gradient after backward",
                reference="every parameter requires grad",
            )
        )
        averages = prof.key_averages()
        sort_key = "self_cuda_time_total" if gpu else "self_cpu_time_total"
        try:
            table = averages.table(sort_by=sort_key, row_limit=TOP)
        except Exception:  # newer torch spells it self_device_time_total
            sort_key = "self_device_time_total"
            table = averages.table(sort_by=sort_key, row_limit=TOP)
        result.artifacts.append(
            Artifact("profile", "text", text=table, meta={"sort_by": sort_key, "steps": steps})
        )

        def key(evt: Any) -> float:
            return _device_total(evt) if gpu else float(evt.self_cpu_time_total)

        def is_op(evt: Any) -> bool:
            # Operators only: kernels are charged to the operator that launched them, and
            # user annotations (forward, loss, ...) span operators, so either would count twice.
            if getattr(evt, "is_user_annotation", False) or evt.key in ANNOTATIONS:
                return False
            if evt.key.startswith("ProfilerStep") or evt.key in PROFILER_INTERNALS:
                return False
            return str(getattr(evt, "device_type", "CPU")).endswith("CPU")

        ops = [e for e in averages if is_op(e)]
        ranked = sorted((e for e in ops if key(e) > 0), key=key, reverse=True)[:TOP]
        total = sum(key(e) for e in ops) or 1.0
        of = "operators' device time" if gpu else "operators' CPU time"
        for evt in ranked:
            per_step_s = key(evt) / 1e6 / steps
            share = 100.0 * key(evt) / total
            # A share of the step's time, not a fraction of any hardware ceiling: it goes in
            # the note and extra, never in percent_of_peak (the "% peak" column).
            m = Measurement(
                contender=evt.key,
                size=f"{hidden} x {batch}",
                time_median_s=per_step_s,
                time_min_s=per_step_s,
                time_max_s=per_step_s,
                runs=steps,
                note=f"{share:.1f}% of {of}, {evt.count // steps} calls per step",
                extra={
                    "share_pct": share,
                    "share_of": of,
                    "calls": int(evt.count),
                    "cpu_total_us": float(evt.cpu_time_total),
                },
            )
            sup.emit(ctx, result, m)
        ctx.progress(1.0, "done")
        result.summary = {
            "steps": steps,
            "sorted_by": sort_key,
            "top": [e.key for e in ranked[:5]],
            "loss_first": float(losses[0]),
            "loss_last": float(losses[-1]),
        }
        result.explanation = (
            "The table lists each operator's self time (excluding what it calls) summed over "
            "the profiled steps. On the GPU, sorting by device time shows where the GPU is "
            "busy: in an MLP that is the matrix products (gemm kernels, listed under aten::mm "
            "/ addmm and their backward), with elementwise ops and the optimizer far behind. "
            "If the CPU total is much larger than the device total, the GPU is waiting for "
            "Python and launches: the step is overhead-bound. The seed's example crashed "
            "because it called backward on tensors that did not require grad; model parameters "
            "always do. For a timeline, export a trace (prof.export_chrome_trace) or use Nsight "
            "Systems."
        )
        if not gpu:
            result.explanation += (
                " Here only the CPU was profiled: the rows are CPU time, and there is no "
                "device column."
            )
        return self.finish(result)


EXPERIMENT = Profiler()
