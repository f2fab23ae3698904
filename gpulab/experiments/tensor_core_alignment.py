"""Tensor-core alignment: matmul at sizes aligned to 64/16/8 vs odd sizes, measured.

Square products M = N = K = s for s around `size`: aligned to 64 (size itself), to 16 and to
8 (size - 16, size - 8), to 2 (size - 2) and odd (size - 1, size + 1). Throughput uses each
product's own flop count (2 s^3), so the penalty is time per flop relative to the aligned size.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, List, ParamSet
from gpulab.core.results import Result, Series
from gpulab.experiments import backends, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import times

CHECK_ROWS = 128
BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}


def fit_bytes(s: int, dtypes: list[str], *, host: bool) -> int:
    """a, b and out at the largest size in the widest dtype, made directly in their dtype, plus
    the verification's blocks (B comes to the CPU a block of columns at a time) and cuBLAS's
    workspace (a fixed allowance)."""
    width = max((BYTES[d] for d in dtypes), default=4)
    slack = fits.HOST_SLACK_BYTES if host else fits.SLACK_BYTES
    return int(3 * width * s * s * 1.05) + slack


def alignment(s: int) -> int:
    """The largest power of two (up to 64) dividing s."""
    a = 1
    while a < 64 and s % (a * 2) == 0:
        a *= 2
    return a


def candidate_sizes(size: int) -> list[int]:
    """Sizes near `size`: a multiple of 64 and the misaligned ones around it."""
    base = max(64, size - size % 64)
    out = [base, base - 16, base - 8, base - 2, base - 1, base + 1]
    return [s for s in out if s > 0]


def measured_answer(penalties: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The run's answer: the largest slowdown over the aligned size, with its dtype and size."""
    found = [(x, d, int(size)) for d, v in penalties.items() for size, x in v.items() if x]
    if not found:
        return {}
    x, d, size = max(found)
    return {"worst_slowdown": x, "worst_dtype": d, "worst_size": size}


class TensorCoreAlignment(Experiment):
    """The `tensor-core-alignment` experiment: Matmul at sizes aligned to 64/16/8 vs misaligned
    (odd) sizes: the real penalty."""

    id = "tensor-core-alignment"
    title = "Tensor cores and dimension alignment"
    summary = "Matmul at sizes aligned to 64/16/8 vs misaligned (odd) sizes: the real penalty."
    lesson = "dtypes-and-tensor-cores"
    params = ParamSet(
        (
            Int("size", 4096, "base size (rounded down to a multiple of 64)", min=64, max=32768),
            Int("cpu_size", 512, "base size on the CPU", min=64, max=8192),
            List(
                "dtypes",
                ["fp16", "bf16"],
                item="choice",
                choices=("fp16", "bf16", "fp32"),
                help="dtypes to run (fp32 runs on the CPU too)",
            ),
        )
    )
    contenders = (
        Contender("torch", "PyTorch GPU (cuBLAS)", "torch-cuda"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
    )
    bench_params = ({"size": 4096}, {"size": 8192})
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch

        result = self.new_result(ctx, params)
        c = result_rows.todo(self, result)[0]
        gpu = c.backend == "torch-cuda"
        if gpu:
            result.unavailable["torch-cpu"] = "the GPU ran instead"
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        base = int(params["size"] if gpu else params["cpu_size"])
        sizes = candidate_sizes(base)
        dtypes = list(params["dtypes"]) if gpu else ["fp32"]
        if not gpu:
            result.unavailable["fp16/bf16"] = "tensor cores are a GPU unit; the CPU runs fp32 only"
        what = f"tensor-core-alignment up to {sizes[-1]}"
        if gpu:
            fits.require_fit(ctx, fit_bytes(sizes[-1], dtypes, host=False), what)
        else:
            fits.require_host_fit(fit_bytes(sizes[-1], dtypes, host=True), what)
        penalties: dict[str, dict[str, float]] = {}
        steps = len(sizes) * len(dtypes)
        done = 0
        with backends.tf32_mode(False):
            for d in dtypes:
                td = backends.torch_dtype(d)
                pts: list[tuple[float, float]] = []
                aligned_rate = None
                for s in sizes:
                    ctx.progress(done / steps, f"{d} {s} x {s} x {s}")
                    done += 1
                    a = torch.randn(s, s, device=dev, dtype=td)
                    b = torch.randn(s, s, device=dev, dtype=td)
                    out = torch.empty(s, s, device=dev, dtype=td)
                    fn = lambda a=a, b=b, out=out: torch.mm(a, b, out=out)  # noqa: E731
                    verification.poison(out)
                    fn()
                    k = min(CHECK_ROWS, s)
                    result.verdicts.append(
                        verification.matmul_verdict(f"{d}-{s}", out[:k], a[:k], b, d, size=f"{s}")
                    )
                    # Every size in the sustained regime (even those under 0.5 ms): mixing
                    # boost-clock and power-limited timings would distort the slowdowns.
                    kw = backends.sustained(ctx, fn, c.backend, always=True)
                    timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend), **kw)
                    m = row(
                        f"{d}-{s}",
                        f"{s}",
                        timing,
                        work=2.0 * s**3,
                        unit="TFLOP/s",
                        scale=1e12,
                        dtype=d,
                        aligned_to=alignment(s),
                        flops_counted="2 * s^3",
                        regime=backends.regime(kw),
                    )
                    rate = m.throughput or 0.0
                    if aligned_rate is None:
                        aligned_rate = rate
                    m.extra["slowdown_vs_aligned"] = aligned_rate / rate if rate else None
                    m.note = f"aligned to {alignment(s)}"
                    result_rows.emit(ctx, result, m)
                    pts.append((float(s), rate))
                    penalties.setdefault(d, {})[str(s)] = aligned_rate / rate if rate else 0.0
                    del a, b, out, fn  # fn holds them too: freed before the next size
                result.series.append(
                    Series(d, [x for x, _ in pts], [y for _, y in pts], "size", "TFLOP/s")
                )
        ctx.progress(1.0, "done")
        worst = {d: max(v.values()) for d, v in penalties.items() if v}
        result.summary = {"sizes": sizes, "slowdown_vs_aligned": penalties, "worst": worst}
        answer = measured_answer(penalties)
        if answer:
            result.summary.update(answer)
        result.explanation = (
            "Tensor cores work on small fixed tiles, and cuBLAS's fastest kernels want each "
            "dimension to be a multiple of 8 elements for fp16/bf16 (16 bytes). An odd size "
            "still runs on tensor cores, but through kernels that pad or handle ragged edges, "
            "so the slowdown column is the real cost here: compare it with the '16x' the "
            "tutorials quote without measuring. Libraries have grown better at odd sizes, so "
            "the penalty is usually far smaller than that, but it is free to avoid: pad "
            "hidden sizes, vocabularies and batch dimensions to multiples of 8 (64 is safest)."
        )
        if gpu:
            result.explanation += (
                " Every size was timed back to back after an untimed warm-up, as the "
                "calibration is, so aligned and misaligned products ran at the same settled "
                "clocks and the slowdowns compare like with like."
            )
        if answer:
            text = (
                f"the worst misaligned size (n={answer['worst_size']}, {answer['worst_dtype']}) "
                f"took {answer['worst_slowdown']:.1f}x the aligned time"
            )
            result.explanation += f" Measured here: {text}."
        if not gpu:
            result.explanation += (
                " On the CPU there are no tensor cores: only fp32 ran, and any difference "
                "comes from SIMD widths and cache blocking."
            )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: the worst misaligned size's slowdown against the aligned time."""
        worst = result.summary.get("worst") or {}
        if not worst:
            return ""
        dtype, slow = max(worst.items(), key=lambda kv: kv[1])
        per_size = (result.summary.get("slowdown_vs_aligned") or {}).get(dtype) or {}
        size = max(per_size, key=lambda k: per_size[k], default="?")
        return f"the worst misaligned size (n={size}, {dtype}) ran {times(slow)} the aligned time"


EXPERIMENT = TensorCoreAlignment()
