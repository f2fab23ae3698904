"""Each experiment's one-line answer (`Result.headline`), computed from its own rows and summary.

One function per experiment id: the experiment decides what its answer is (pi and its error, a
speedup, a % of a ceiling). Every figure comes from the run, never from a constant; where the
run has too little to say (every GPU row unavailable), the line says what it did measure.
`Experiment.finish` calls `headline()`; a bug here costs the line, never the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpulab.core.results import Measurement, Result

Headline = Callable[[Any, Result], str]
_BY_ID: dict[str, Headline] = {}
GPU_BACKENDS = ("torch-cuda", "cupy")


def headline(exp: Any, result: Result) -> str:
    """The experiment's answer, or the generic one (its fastest row) when it has none."""
    maker = _BY_ID.get(exp.id, generic)
    try:
        text = maker(exp, result)
    except Exception:  # noqa: BLE001 - a missing figure must not sink a finished run
        text = ""
    return text or generic(exp, result)


def _for(*ids: str) -> Callable[[Headline], Headline]:
    def register(fn: Headline) -> Headline:
        for i in ids:
            _BY_ID[i] = fn
        return fn

    return register


# ---- formatting ------------------------------------------------------------------------------


def times(ratio: float) -> str:
    """73x, 4.2x, 1.05x: as many digits as a person needs to compare."""
    if ratio >= 10:
        return f"{ratio:.0f}x"
    if ratio >= 1.995:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def rate(m: Measurement) -> str:
    return f"{m.throughput:.3g} {m.unit}".strip() if m.throughput is not None else ""


def duration(seconds: float) -> str:
    from gpulab.report import fmt_time

    return fmt_time(seconds)


def label(exp: Any, contender: str) -> str:
    return next((c.label for c in exp.contenders if c.id == contender), contender)


def backend(exp: Any, contender: str) -> str:
    return next((c.backend for c in exp.contenders if c.id == contender), "")


def measured(result: Result) -> list[Measurement]:
    return [m for m in result.measurements if not m.extrapolated and m.time_median_s > 0]


def fastest(rows: Iterable[Measurement]) -> Measurement | None:
    """By throughput where rows have one (same work), else by time."""
    rows = list(rows)
    with_rate = [m for m in rows if m.throughput]
    if with_rate:
        return max(with_rate, key=lambda m: m.throughput or 0.0)
    return min(rows, key=lambda m: m.time_median_s, default=None)


def of_peak(m: Measurement, what: str = "") -> str:
    if m.percent_of_peak is None:
        return ""
    return f", {m.percent_of_peak:.0f}% of {what or m.peak_name or 'its ceiling'}"


def generic(exp: Any, result: Result) -> str:
    """The fastest row, its rate and % of peak, and how far ahead of the slowest it was."""
    rows = measured(result)
    best = fastest(rows)
    if best is None:
        return f"{exp.title}: nothing was measured here"
    text = f"fastest: {label(exp, best.contender)}"
    text += f" at {rate(best)}" if best.throughput else f" in {duration(best.time_median_s)}"
    text += of_peak(best)
    slow = max(rows, key=lambda m: m.time_median_s)
    same_work = slow.size == best.size and slow.dtype == best.dtype
    if slow is not best and same_work and best.time_median_s > 0:
        ratio = slow.time_median_s / best.time_median_s
        text += f"; {times(ratio)} faster than {label(exp, slow.contender)}"
    return text


# ---- the experiments -------------------------------------------------------------------------


@_for("montecarlo")
def _montecarlo(exp: Any, result: Result) -> str:
    s = result.summary
    est, err, se = s.get("estimate"), s.get("error"), s.get("standard_error")
    if est is None or err is None or not se:
        return ""
    who = label(exp, str(s.get("estimate_by", "")))
    return (
        f"pi ≈ {est:.6f} (error {err:.1e}, {err / se:.1f} standard errors) "
        f"from {int(s.get('samples_run', 0)):,} samples by {who}"
    )


@_for("matmul")
def _matmul(exp: Any, result: Result) -> str:
    rows = measured(result)
    sizes = sorted({int(m.size) for m in rows}, reverse=True)
    for n in sizes:
        at = [m for m in rows if int(m.size) == n]
        best = fastest(at)
        if best is None:
            continue
        gpu = backend(exp, best.contender) in GPU_BACKENDS
        base_id = "numpy" if gpu else "python"
        # Pure Python's extrapolated rows count as a baseline: that is what they are for.
        base = [
            m
            for m in result.measurements
            if m.contender == base_id and int(m.size) == n and m.time_median_s > 0
        ]
        if not base or best.contender == base_id:
            continue
        # Against the baseline's row in the same dtype where it ran one, else its fastest row:
        # an fp64 NumPy row must not inflate a bf16 GPU lead.
        same = [b for b in base if b.dtype == best.dtype]
        ref = min(same or base, key=lambda b: b.time_median_s)
        ratio = ref.time_median_s / best.time_median_s
        who = "the GPU" if gpu else label(exp, best.contender)
        guess = " (extrapolated)" if ref.extrapolated else ""
        return (
            f"{who} was {times(ratio)} faster than {label(exp, base_id)}{guess} at n={n} "
            f"({best.contender} {best.dtype}: {rate(best)}{of_peak(best, 'peak')})"
        )
    return ""


@_for("blur")
def _blur(exp: Any, result: Result) -> str:
    rows = measured(result)
    best = next(
        (m for cid in ("cupy-kernel", "torch", "scipy") for m in rows if m.contender == cid),
        None,
    )
    if best is None:
        return ""
    where = "GPU" if backend(exp, best.contender) in GPU_BACKENDS else "CPU"
    if best.percent_of_peak is not None:
        return (
            f"your blur ({label(exp, best.contender)}) ran at {best.percent_of_peak:.0f}% of "
            f"this {where}'s copy bandwidth ({rate(best)}, {best.size} in "
            f"{duration(best.time_median_s)})"
        )
    return f"{label(exp, best.contender)} blurred {best.size} in {duration(best.time_median_s)}"


@_for("calibrate")
def _calibrate(exp: Any, result: Result) -> str:
    p = result.summary.get("peaks") or {}
    what = "this CPU" if p.get("cpu") else "this GPU"
    parts = []
    if p.get("copy_gbs"):
        parts.append(f"copies at {p['copy_gbs']:.3g} GB/s")
    tflops = p.get("matmul_tflops") or {}
    if tflops:
        dtype, best = max(tflops.items(), key=lambda kv: kv[1] or 0)
        parts.append(f"multiplies matrices at {best:.3g} TFLOP/s ({dtype})")
    if p.get("h2d_pinned_gbs"):
        parts.append(f"takes {p['h2d_pinned_gbs']:.3g} GB/s from the host")
    return f"{what} " + ", ".join(parts) if parts else ""


@_for("kernel-fusion")
def _fusion(exp: Any, result: Result) -> str:
    gains = {k: v for k, v in result.summary.items() if "_over_" in k and v}
    if not gains:
        return _streaming(exp, result)
    key, x = max(gains.items(), key=lambda kv: kv[1])
    fused, eager = key.split("_over_")
    return f"{label(exp, fused)} ran at {times(x)} the rate of {label(exp, eager)}"


@_for("vector-add", "reduction")
def _streaming(exp: Any, result: Result) -> str:
    """Memory-bound work: the best GB/s, its share of the copy ceiling, the lead over NumPy."""
    rows = [m for m in measured(result) if m.unit == "GB/s"]
    best = fastest(rows)
    if best is None:
        return ""
    text = f"{label(exp, best.contender)} streamed {rate(best)}"
    text += of_peak(best, "the copy bandwidth")
    numpy = next((m for m in rows if m.contender == "numpy" and m.size == best.size), None)
    if numpy is not None and numpy is not best and numpy.throughput:
        text += f"; {times(best.throughput / numpy.throughput)} NumPy's rate"  # type: ignore[operator]
    return text


@_for("bandwidth")
def _bandwidth(exp: Any, result: Result) -> str:
    largest = result.summary.get("largest_size_gbs") or {}
    pin, page = largest.get("h2d-pinned"), largest.get("h2d-pageable")
    if pin:
        text = f"pinned host->GPU copies reached {pin:.3g} GB/s"
        if page:
            text += f", {times(pin / page)} pageable ({page:.3g} GB/s)"
        if largest.get("d2d"):
            text += f"; on the GPU itself {largest['d2d']:.3g} GB/s"
        return text
    host = largest.get("host-memcpy")
    if host:
        return f"this CPU's memory copied {host:.3g} GB/s at the largest size (no GPU rows here)"
    return ""


@_for("create-on-device")
def _create(exp: Any, result: Result) -> str:
    s = result.summary
    if s.get("speedup_on_device"):
        return (
            f"creating the tensor on the GPU was {times(s['speedup_on_device'])} faster than "
            "torch.rand on the CPU then .to('cuda')"
        )
    t = (s.get("median_s") or {}).get("cpu-rand")
    if t:
        return (
            f"torch.rand({int(s['n']):,}) on the CPU took {duration(t)} (the GPU rows need a GPU)"
        )
    return ""


@_for("round-trips")
def _round_trips(exp: Any, result: Result) -> str:
    s = result.summary
    if s.get("round_trip_penalty"):
        return (
            f"a trip to the CPU and back every step was {times(s['round_trip_penalty'])} "
            "slower than staying on the GPU"
        )
    t = (s.get("time_per_step_s") or {}).get("cpu")
    if t:
        return f"all on the CPU: {duration(t)} a step (the GPU rows need a GPU)"
    return ""


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


@_for("profiler")
def _profiler(exp: Any, result: Result) -> str:
    from gpulab.experiments.headlines_claims import profiler_tensor_cores

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


@_for("allreduce")
def _allreduce(exp: Any, result: Result) -> str:
    s = result.summary
    bus = (s.get("busbw_gbs") or {}).get("all-reduce")
    if bus is None:
        return ""
    from gpulab.experiments.syllabus_support import size_label

    text = (
        f"all-reduce on {s['ranks']} ranks ({s['backend']}) reached a busbw of {bus:.3g} GB/s "
        f"at {size_label(s['largest_bytes'])}"
    )
    if s.get("allreduce_of_peer"):
        text += f", {s['allreduce_of_peer']:.0%} of the {s['peer_copy_gbs']:.3g} GB/s peer copy"
    return text


@_for("p2p")
def _p2p(exp: Any, result: Result) -> str:
    s = result.summary
    if not s.get("gpus"):
        return ""
    return (
        f"GPU-to-GPU copies ran {s['peer_gbs_min']:.3g}-{s['peer_gbs_max']:.3g} GB/s "
        f"between {s['gpus']} GPUs with peer access"
    )


@_for("ddp-scaling")
def _ddp(exp: Any, result: Result) -> str:
    s = result.summary
    sizes = s.get("world_sizes") or []
    if len(sizes) < 2:
        return ""
    n = sizes[-1]
    return (
        f"DDP on {n} ranks ({s['backend']}) trained at {s['efficiency_at_max']:.0%} scaling "
        f"efficiency ({s['samples_per_s'][n]:.3g} samples/s), loss curves matching 1 rank"
    )


# Issue 16's measurements register their own headlines (kept apart: this module's size).
from gpulab.experiments import headlines_claims  # noqa: E402, F401
