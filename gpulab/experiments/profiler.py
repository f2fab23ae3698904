"""Profiler: torch.profiler's table of a small training step, top operators by device time.

The step is a real one (forward, loss, backward on parameters that require grad, optimizer
step), unlike the seed's, which called backward on tensors that did not require grad and
crashed. Two steps run unprofiled first so one-time costs (cuBLAS handles, allocator growth)
stay out of the table.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Choice, Int, ParamSet
from gpulab.core.results import Artifact, Measurement, Result, Verdict
from gpulab.experiments import backends, ceilings, fits, result_rows
from gpulab.experiments import tensor_cores as tc
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.wording import duration, measured

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
    return int((2 * 4 * params + acts) * 1.1) + fits.SLACK_BYTES


def _device_total(evt: Any) -> float:
    """Self device time in microseconds (the attribute was renamed from *_cuda_* in torch 2.4)."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(evt, name, None)
        if value is not None:
            return float(value)
    return 0.0


class Profiler(Experiment):
    """The `profiler` experiment: torch.profiler on forward, loss, backward and step: where the
    time goes."""

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
            Choice(
                "dtype",
                "fp32",
                ("fp32", "tf32", "bf16", "fp16"),
                "matmul precision on the GPU: fp32 (TF32 off), TF32, or bf16/fp16 autocast",
            ),
        )
    )
    contenders = (
        Contender("torch", "PyTorch GPU (CUDA activity)", "torch-cuda"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
    )
    bench_params = ({"steps": 5}, {"steps": 5, "dtype": "bf16"})
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        result = self.new_result(ctx, params)
        gpu = ctx.has_cuda
        dtype = str(params["dtype"]) if gpu else "fp32"
        if gpu:
            result.unavailable["torch-cpu"] = "the GPU was profiled instead"
        elif params["dtype"] != "fp32":
            result.unavailable[params["dtype"]] = "the dtype choice is for GPU matmuls"
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        steps, batch = int(params["steps"]), int(params["batch"])
        hidden = int(params["hidden"]) if gpu else min(int(params["hidden"]), 512)
        what = f"profiler with hidden={hidden}, batch={batch}"
        need = fit_bytes(hidden, batch)
        if gpu:
            fits.require_fit(ctx, need, what)
        else:
            fits.require_host_fit(need - fits.SLACK_BYTES + fits.HOST_SLACK_BYTES, what)
        # The fp32 CUDA-core ceiling the kernel rows compare with (calibrated once, cached).
        p = ceilings.peaks(ctx) if gpu else None
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

        half = dtype in ("bf16", "fp16")
        autocast_dtype = backends.torch_dtype(dtype) if half else torch.float32

        def step() -> Any:
            with (
                record_function(ANNOTATIONS[0]),
                torch.autocast(dev.type, dtype=autocast_dtype, enabled=half),
            ):
                logits = model(x)
            with record_function(ANNOTATIONS[1]):
                loss = torch.nn.functional.cross_entropy(logits.float(), target)
            with record_function(ANNOTATIONS[2]):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with record_function(ANNOTATIONS[3]):
                opt.step()
            return loss

        ctx.progress(0.05, "warm-up steps")
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
        losses = []
        with backends.tf32_mode(dtype == "tf32"):
            for _ in range(2):
                step()
            if gpu:
                torch.cuda.synchronize(dev)
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
        except Exception:  # noqa: BLE001 - newer torch spells it self_device_time_total
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
            result_rows.emit(ctx, result, m)
        kernels: dict[str, Any] = {}
        if gpu:
            ctx.progress(0.9, f"one {batch} x {hidden} x {hidden} matmul in {dtype}, measured")
            kernels = kernel_rows(
                ctx, result, averages, steps, p, (torch, dev), batch, hidden, dtype
            )
        ctx.progress(1.0, "done")
        result.summary = {
            "dtype": dtype,
            **kernels,
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
        if kernels.get("probe"):
            pr = kernels["probe"]
            result.explanation += (
                " The kernel rows say, for each GPU kernel, whether it ran on tensor cores: by "
                "its name (the instruction, hmma/wgmma/gmma on tensor cores or ffma/simt on "
                "CUDA cores, and the dtype; 'xmma' or 'gemm' alone prove nothing) and, for the "
                f"matmul kernel, by a measurement: one {pr['shape'][0]} x {pr['shape'][1]} x "
                f"{pr['shape'][2]} {dtype} product ran {pr['measured']}."
            )
        if not gpu:
            result.explanation += (
                " Here only the CPU was profiled: the rows are CPU time, and there is no "
                "device column."
            )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the operation that took the largest share of the profiled time."""
        # Operators only: the kernel rows (GPU) are the same time seen from the device side.
        rows = [m for m in measured(result) if m.extra.get("kind") != "kernel"]
        if not rows:
            return ""
        top = max(rows, key=lambda m: m.time_median_s)
        share, of = top.extra.get("share_pct"), top.extra.get("share_of", "the profiled time")
        if share is None:
            return ""
        return (
            f"{top.contender} took the most time: {share:.0f}% of the {of.removeprefix('the ')} "
            f"({duration(top.time_median_s)} a step)"
        ) + profiler_tensor_cores(result)


def kernel_rows(
    ctx: Context,
    result: Result,
    averages: Any,
    steps: int,
    p: Any,
    where: tuple[Any, Any],
    batch: int,
    hidden: int,
    dtype: str,
) -> dict[str, Any]:
    """A row per GPU kernel (top by device time) with its tensor-core verdicts: by name, and,
    for the kernel the measured matmul also ran, by its rate against the fp32 CUDA-core
    ceiling. Returns the summary's part."""
    ceiling = ceilings.peak(p, "matmul:fp32")
    probe = tc.probe(*where, batch, hidden, hidden, dtype)
    if probe:
        probe["verdict"], probe["measured"] = tc.by_rate(probe["tflops"], ceiling)
    found = sorted(
        (e for e in averages if tc.is_kernel(e) and tc.device_us(e) > 0),
        key=tc.device_us,
        reverse=True,
    )[:TOP]
    matmuls = used = 0
    for evt in found:
        name_says, sign = tc.by_name(evt.key)
        measured = ""
        if probe and evt.key == probe["kernel"]:
            measured = probe["verdict"]
        verdict = measured or name_says
        matmuls += name_says != "n/a" or bool(measured)
        used += verdict == "yes"
        per_step_s = tc.device_us(evt) / 1e6 / steps
        note = f"tensor cores: {verdict} (name: {name_says}, {sign}"
        note += f"; measured: {probe['measured']})" if measured else ")"
        result_rows.emit(
            ctx,
            result,
            Measurement(
                contender=f"kernel {evt.key[:80]}",
                size=f"{hidden} x {batch}",
                dtype=dtype,
                time_median_s=per_step_s,
                time_min_s=per_step_s,
                time_max_s=per_step_s,
                runs=steps,
                note=note,
                extra={
                    "kind": "kernel",
                    "kernel": evt.key,
                    "tensor_cores": verdict,
                    "by_name": name_says,
                    "name_sign": sign,
                    "by_measurement": measured,
                    "calls": int(evt.count),
                },
            ),
        )
    return {
        "probe": probe,
        "fp32_cuda_core_ceiling_tflops": ceiling,
        "matmul_kernels": matmuls,
        "tensor_core_kernels": used,
    }


EXPERIMENT = Profiler()


def profiler_tensor_cores(result: Result) -> str:
    """The profiler headline's tail: how many matmul kernels used tensor cores, and the
    measured fact behind it (empty on the CPU)."""
    s = result.summary
    probe = s.get("probe") or {}
    if not probe.get("measured"):
        return ""
    return (
        f"; {s.get('tensor_core_kernels', 0)} of {s.get('matmul_kernels', 0)} matmul kernels "
        f"on tensor cores ({s.get('dtype')}), measured: {probe['measured']}"
    )
