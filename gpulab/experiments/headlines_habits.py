"""Headlines of the PyTorch habits (create on the device, round trips, batching, in place,
dtypes, alignment, layout, mixed precision) and of the memory experiment: what the habit
gained or cost on this machine, or the CPU's own figure where the GPU rows could not run.

Registered into `headlines` (which imports this module at its end)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpulab.core.results import Result
from gpulab.experiments.headlines import _for, duration, label, measured, times


def on_gpu_else_cpu(
    s: dict[str, Any],
    ratio_key: str,
    gpu_line: str,
    cpu_time: tuple[str, str],
    cpu_line: Callable[[str], str],
) -> str:
    """`gpu_line` with the summary's GPU ratio (`{x}`) when the GPU rows ran; else `cpu_line` of
    the CPU's time, s[cpu_time[0]][cpu_time[1]], and why the GPU's half is missing."""
    if s.get(ratio_key):
        return gpu_line.format(x=times(s[ratio_key]))
    t = (s.get(cpu_time[0]) or {}).get(cpu_time[1])
    if t:
        return f"{cpu_line(duration(t))} (the GPU rows need a GPU)"
    return ""


@_for("create-on-device")
def _create(exp: Any, result: Result) -> str:
    s = result.summary
    return on_gpu_else_cpu(
        s,
        "speedup_on_device",
        "creating the tensor on the GPU was {x} faster than torch.rand on the CPU then .to('cuda')",
        ("median_s", "cpu-rand"),
        lambda t: f"torch.rand({int(s['n']):,}) on the CPU took {t}",
    )


@_for("round-trips")
def _round_trips(exp: Any, result: Result) -> str:
    return on_gpu_else_cpu(
        result.summary,
        "round_trip_penalty",
        "a trip to the CPU and back every step was {x} slower than staying on the GPU",
        ("time_per_step_s", "cpu"),
        lambda t: f"all on the CPU: {t} a step",
    )


@_for("batching")
def _batching(exp: Any, result: Result) -> str:
    s = result.summary
    for where in ("gpu", "cpu"):
        x = s.get(f"bmm_speedup_{where}")
        if x:
            return (
                f"one torch.bmm was {times(x)} faster than a loop of {s['batch']} torch.mm "
                f"on the {where.upper()}"
            )
    return ""


@_for("in-place")
def _in_place(exp: Any, result: Result) -> str:
    peaks = result.summary.get("peak_extra_mib") or {}
    rows = {m.contender: m for m in measured(result)}
    for where in ("gpu", "cpu"):
        inp, out = rows.get(f"in-place-{where}"), rows.get(f"out-of-place-{where}")
        if inp is None or out is None:
            continue
        text = (
            f"x.add_(y) took {duration(inp.time_median_s)}, x = x + y "
            f"{duration(out.time_median_s)} on the {where.upper()}"
        )
        extra = peaks.get(f"out-of-place-{where}")
        if extra is not None:
            text += f"; x = x + y needed {extra:.3g} MiB more memory"
        return text
    return ""


@_for("dtypes")
def _dtypes(exp: Any, result: Result) -> str:
    s = result.summary
    tflops = {d: v for d, v in (s.get("matmul_tflops") or {}).items() if v}
    if not tflops:
        return ""
    fp8 = tflops.pop("fp8", None)  # scaled e4m3: not a drop-in dtype, named apart
    if not tflops:
        return f"fp8 (e4m3, scaled) matmul at {fp8:.3g} TFLOP/s" if fp8 else ""
    dtype, best = max(tflops.items(), key=lambda kv: kv[1])
    text = (
        f"fastest matmul on the {str(s.get('device', '')).upper()}: {dtype} at {best:.3g} TFLOP/s"
    )
    if dtype != "fp32" and tflops.get("fp32"):
        text += f", {times(best / tflops['fp32'])} fp32's rate"
    if s.get("fp32_over_fp64"):
        text += f"; fp32 ran at {times(s['fp32_over_fp64'])} fp64's rate"
    if fp8:
        text += f"; fp8 (e4m3, scaled) at {fp8:.3g} TFLOP/s"
    return text


@_for("tensor-core-alignment")
def _alignment(exp: Any, result: Result) -> str:
    worst = result.summary.get("worst") or {}
    if not worst:
        return ""
    dtype, slow = max(worst.items(), key=lambda kv: kv[1])
    per_size = (result.summary.get("slowdown_vs_aligned") or {}).get(dtype) or {}
    size = max(per_size, key=lambda k: per_size[k], default="?")
    return f"the worst misaligned size (n={size}, {dtype}) ran {times(slow)} the aligned time"


@_for("memory-layout")
def _layout(exp: Any, result: Result) -> str:
    s = result.summary
    if s.get("copy_then_op_over_view"):
        return (
            f".contiguous() then the op took {times(s['copy_then_op_over_view'])} as long as the "
            f"op on the transposed view (n={s.get('size')})"
        )
    return ""


@_for("mixed-precision")
def _mixed(exp: Any, result: Result) -> str:
    rows = {m.contender: m for m in measured(result)}
    losses = result.summary.get("final_loss") or {}
    for base, fast in (("fp32", "bf16"), ("fp32", "fp16-scaler"), ("fp32-cpu", "bf16-cpu")):
        a, b = rows.get(base), rows.get(fast)
        if a is None or b is None:
            continue
        ratio = a.time_median_s / b.time_median_s
        word = "faster" if ratio >= 1 else "slower"
        shown = ratio if ratio >= 1 else 1 / ratio
        text = f"{label(exp, fast)} trained {times(shown)} {word} than {label(exp, base)}"
        if losses.get(base) is not None and losses.get(fast) is not None:
            text += f" (final loss {losses[fast]:.4g} vs {losses[base]:.4g})"
        return text
    return ""


@_for("memory")
def _memory(exp: Any, result: Result) -> str:
    s = result.summary
    if s.get("context_bytes_nvml") is not None:
        return (
            f"the CUDA context held {s['context_bytes_nvml'] / 2**20:.0f} MiB beyond PyTorch's "
            f"cache; after del, {s.get('reserved_after_del', 0) / 2**20:.0f} MiB stayed reserved"
        )
    if "rss_after_fill" in s:
        mib = 2**20
        empty = (s["rss_after_empty"] - s["rss_baseline"]) / mib
        fill = (s["rss_after_fill"] - s["rss_baseline"]) / mib
        return (
            f"resident memory grew {empty:.0f} MiB when {s['bytes'] / mib:.0f} MiB were "
            f"allocated and {fill:.0f} MiB once they were written"
        )
    return ""
