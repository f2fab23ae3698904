"""Mixed precision: train one small MLP N steps in fp32, fp16 autocast + GradScaler, bf16 autocast.

Every mode starts from the same weights and sees the same data (a fixed random regression task
made by a random "teacher" network), so final losses are comparable. Time per step is the
median over the timed steps (CUDA events); peak memory is torch.cuda.max_memory_allocated during
the mode's steps.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import backends, fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import label, measured, times

CPU_CAP_HIDDEN = 512
CPU_CAP_BATCH = 256
LOSS_AGREEMENT = 0.25  # a mixed-precision run may end within 25% of fp32's final loss


def build(hidden: int, layers: int, features: int, device: Any = None) -> Any:
    """The MLP, its weights made directly on `device` (never a host copy of a GPU model)."""
    import torch

    mods: list[Any] = [torch.nn.Linear(features, hidden, device=device), torch.nn.GELU()]
    for _ in range(layers - 1):
        mods += [torch.nn.Linear(hidden, hidden, device=device), torch.nn.GELU()]
    mods.append(torch.nn.Linear(hidden, 1, device=device))
    return torch.nn.Sequential(*mods)


def weights(hidden: int, layers: int, features: int) -> int:
    """Parameters of `build(hidden, layers, features)`, biases included."""
    return (features + 1) * hidden + (layers - 1) * (hidden + 1) * hidden + hidden + 1


def fit_bytes(hidden: int, layers: int, batch: int, features: int) -> int:
    """Memory of the fp32 mode, the largest: the initial weights and the mode's copy, its
    gradients and SGD's momentum (4 fp32 copies of the weights), autocast's half-precision copy
    of the weights in the mixed modes (2 bytes each), the activations kept for backward (each
    layer's Linear and GELU outputs, fp32) and a few activation-sized gradients in flight
    during backward; plus cuBLAS's workspace and the allocator's rounding (a fixed allowance).
    """
    p = weights(hidden, layers, features)
    acts = 4 * batch * hidden * (2 * layers + 3) + 4 * batch * (features + 2)
    return int((4 * 4 * p + 2 * p + acts) * 1.1) + fits.SLACK_BYTES


class MixedPrecision(Experiment):
    """The `mixed-precision` experiment: An MLP trained N steps: fp32 vs fp16 autocast +
    GradScaler vs bf16 autocast."""

    id = "mixed-precision"
    title = "Mixed precision training"
    summary = "An MLP trained N steps: fp32 vs fp16 autocast + GradScaler vs bf16 autocast."
    lesson = "mixed-precision"
    params = ParamSet(
        (
            Int("steps", 50, "timed training steps per mode", min=1, max=10_000),
            Int("hidden", 4096, "hidden width (capped at 512 on the CPU)", min=8, max=65536),
            Int("batch", 1024, "batch size (capped at 256 on the CPU)", min=1, max=65536),
            Int("layers", 4, "hidden layers", min=1, max=64),
        )
    )
    contenders = (
        Contender("fp32", "fp32 (GPU)", "torch-cuda"),
        Contender("fp16-scaler", "autocast fp16 + GradScaler (GPU)", "torch-cuda"),
        Contender("bf16", "autocast bf16, no scaler (GPU)", "torch-cuda"),
        Contender("fp32-cpu", "fp32 (CPU)", "torch-cpu"),
        Contender("bf16-cpu", "autocast('cpu', bf16) (CPU)", "torch-cpu"),
    )
    bench_params = ({"steps": 50, "hidden": 4096, "batch": 1024, "layers": 4},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch

        result = self.new_result(ctx, params)
        gpu = ctx.has_cuda
        todo = [c for c in result_rows.todo(self, result) if (c.backend == "torch-cuda") == gpu]
        for c in self.contenders:
            if c not in todo and c.id not in result.unavailable:
                result.unavailable[c.id] = "the GPU modes ran instead"
        if not gpu:
            result.unavailable["fp16-scaler"] = (
                "fp16 autocast with GradScaler needs CUDA (on the CPU, bf16 is the mixed dtype)"
            )
        steps, layers = int(params["steps"]), int(params["layers"])
        hidden, batch = int(params["hidden"]), int(params["batch"])
        if not gpu:
            hidden, batch = min(hidden, CPU_CAP_HIDDEN), min(batch, CPU_CAP_BATCH)
        features = min(hidden, 256)
        what = f"mixed-precision with {layers} x {hidden}, batch {batch}"
        need = fit_bytes(hidden, layers, batch, features)
        if gpu:
            fits.require_fit(ctx, need, what)
        else:
            fits.require_host_fit(need - fits.SLACK_BYTES + fits.HOST_SLACK_BYTES, what)
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        gen = torch.Generator().manual_seed(1234)
        teacher = build(64, 2, features)
        x = torch.randn(batch, features, generator=gen)
        with torch.no_grad():
            y = teacher(x)
        x, y = x.to(dev), y.to(dev)
        torch.manual_seed(0)
        init = build(hidden, layers, features, device=dev)
        flops = (
            6.0
            * batch
            * sum(m.in_features * m.out_features for m in init if isinstance(m, torch.nn.Linear))
        )
        losses: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), c.label)
            model = copy.deepcopy(init)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            amp_dtype = {
                "fp16-scaler": torch.float16,
                "bf16": torch.bfloat16,
                "bf16-cpu": torch.bfloat16,
            }.get(c.id)
            scaler = torch.amp.GradScaler("cuda") if c.id == "fp16-scaler" else None
            state: dict[str, Any] = {}

            def step(
                model: Any = model,
                opt: Any = opt,
                amp_dtype: Any = amp_dtype,
                scaler: Any = scaler,
                state: dict[str, Any] = state,
            ) -> None:
                opt.zero_grad(set_to_none=True)
                with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                    loss = torch.nn.functional.mse_loss(model(x).float(), y)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    loss.backward()
                    opt.step()
                state["loss"] = loss.detach()
                state["n"] = state.get("n", 0) + 1
                if state["n"] == 3 + steps:  # the first step, 2 warm-ups, `steps` timed
                    state["final"] = state["loss"]

            first_loss = None
            if gpu:
                torch.cuda.synchronize(dev)
                base = torch.cuda.memory_allocated(dev)
                torch.cuda.reset_peak_memory_stats(dev)
            step()
            first_loss = float(state["loss"])
            timing = ctx.timer.measure(
                step,
                sync=backends.sync_kind(c.backend),
                warmup=2,
                repeats=steps,
                min_runs=steps,
                budget_s=float("inf"),
                cold=False,
            )
            # The timer may take a wild set of timings again (more steps): every contender's
            # final loss is read after the same number of steps, so the losses compare.
            final = float(state.get("final", state["loss"]))
            losses[c.id] = final
            extra: dict[str, Any] = {"first_loss": first_loss, "final_loss": final}
            if gpu:
                extra["peak_bytes"] = int(torch.cuda.max_memory_allocated(dev) - base)
            result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    f"{layers} x {hidden}, batch {batch}",
                    timing,
                    work=flops,
                    unit="TFLOP/s",
                    scale=1e12,
                    dtype=c.id.split("-")[0],
                    flops_counted="6 * batch * weights (forward + backward)",
                    time_per_step_s=timing.median_s,
                    **extra,
                ),
            )
            learned = final < first_loss and math.isfinite(final)
            result.verdicts.append(
                Verdict.check(
                    c.id,
                    final / first_loss if learned else math.inf,
                    1.0,
                    metric="final loss / first loss (must fall)",
                    reference="the mode's own first step",
                )
            )
            del model, opt, scaler, step, state  # step holds them too
            if gpu:
                torch.cuda.empty_cache()
        ref_id = "fp32" if gpu else "fp32-cpu"
        for cid, loss in losses.items():
            if cid != ref_id and ref_id in losses:
                result.verdicts.append(
                    Verdict.check(
                        f"{cid} vs fp32",
                        abs(loss - losses[ref_id]) / max(losses[ref_id], 1e-12),
                        LOSS_AGREEMENT,
                        metric="relative difference of the final loss",
                        reference="the fp32 run from the same weights and data",
                    )
                )
        ctx.progress(1.0, "done")
        result.summary = {
            "hidden": hidden,
            "batch": batch,
            "layers": layers,
            "steps": steps,
            "final_loss": losses,
        }
        result.explanation = (
            "Autocast runs matrix products in fp16 or bf16 on the tensor cores while keeping "
            "the weights, the loss and reductions in fp32, so activations take half the memory "
            "and the loss follows the fp32 run closely. How much faster a step gets depends on "
            "how much of it is large matmuls: several times for a step that is mostly matmuls, "
            "little or nothing for a small or overhead-bound model; the measured times say which "
            "this one is. "
            "fp16 has a narrow exponent range: small gradients underflow to zero, so "
            "GradScaler multiplies the loss before backward and divides the gradients after, "
            "skipping a step when they overflow. bf16 has fp32's exponent range, so it needs no "
            "scaler. Use torch.autocast('cuda') and torch.amp.GradScaler('cuda'): the "
            "torch.cuda.amp spellings are deprecated."
        )
        if not gpu:
            result.explanation += (
                " Here only the CPU ran: fp32 against bf16 autocast('cpu'), at a capped size; "
                "CPUs without bf16 matrix units may see little or no speedup."
            )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the low-precision run's speedup over fp32 and both final losses."""
        rows = {m.contender: m for m in measured(result)}
        losses = result.summary.get("final_loss") or {}
        for base, fast in (("fp32", "bf16"), ("fp32", "fp16-scaler"), ("fp32-cpu", "bf16-cpu")):
            a, b = rows.get(base), rows.get(fast)
            if a is None or b is None:
                continue
            ratio = a.time_median_s / b.time_median_s
            word = "faster" if ratio >= 1 else "slower"
            shown = ratio if ratio >= 1 else 1 / ratio
            text = f"{label(self, fast)} trained {times(shown)} {word} than {label(self, base)}"
            if losses.get(base) is not None and losses.get(fast) is not None:
                text += f" (final loss {losses[fast]:.4g} vs {losses[base]:.4g})"
            return text
        return ""


EXPERIMENT = MixedPrecision()
