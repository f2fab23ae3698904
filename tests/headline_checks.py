"""What each experiment's headline must mention: its key figure, read back from the run's rows.

Used by the tests that already run each experiment (CPU mode: test_exp_syllabus, test_montecarlo,
test_matmul, test_blur, test_peaks; the GPU paths: test_exp_gpu): the figure is taken from the
result here, so a headline that was hard-coded, or computed from the wrong row, fails.
"""

from __future__ import annotations

from typing import Any

from gpulab.experiments.wording import times


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m for m in result["measurements"] if not m.get("extrapolated") and m["time_median_s"] > 0
    ]


def _best_rate(result: dict[str, Any], unit: str = "GB/s") -> str:
    best = max((m for m in _rows(result) if m["unit"] == unit), key=lambda m: m["throughput"])
    return f"{best['throughput']:.3g} {unit}"


def _fmt_time(seconds: float) -> str:
    from gpulab.render.results import fmt_time

    return fmt_time(seconds)


def key_figures(exp_id: str, result: dict[str, Any]) -> list[str]:
    """Substrings the headline of this CPU-mode run must contain."""
    s = result["summary"]
    rows = {m["contender"]: m for m in _rows(result)}
    if exp_id == "montecarlo":
        z = s["error"] / s["standard_error"]
        return [f"pi ≈ {s['estimate']:.6f}", f"error {s['error']:.1e}", f"{z:.1f} standard errors"]
    if exp_id == "matmul":
        n = max(int(m["size"]) for m in _rows(result) if m["contender"] != "python")
        at = [m for m in _rows(result) if int(m["size"]) == n]
        best = max(at, key=lambda m: m["throughput"])
        python = [
            m for m in result["measurements"] if m["contender"] == "python" and int(m["size"]) == n
        ]
        return [f"{times(python[0]['time_median_s'] / best['time_median_s'])} faster", f"n={n}"]
    if exp_id == "blur":
        return [f"{rows['scipy']['percent_of_peak']:.0f}% of this CPU's copy bandwidth"]
    if exp_id == "calibrate":
        return [f"{s['peaks']['copy_gbs']:.3g} GB/s"]
    gpu = _gpu_figures(exp_id, s, rows)
    if gpu is not None:
        return gpu
    if exp_id in ("vector-add", "reduction", "kernel-fusion"):
        return [_best_rate(result)]
    if exp_id == "bandwidth":
        return [f"{s['largest_size_gbs']['host-memcpy']:.3g} GB/s"]
    if exp_id == "create-on-device":
        return [_fmt_time(s["median_s"]["cpu-rand"])]
    if exp_id == "round-trips":
        return [_fmt_time(s["time_per_step_s"]["cpu"])]
    if exp_id == "batching":
        return [f"{times(s['bmm_speedup_cpu'])} faster"]
    if exp_id == "in-place":
        return [_fmt_time(rows[c]["time_median_s"]) for c in ("in-place-cpu", "out-of-place-cpu")]
    if exp_id == "dtypes":
        return [f"{max(s['matmul_tflops'].values()):.3g} TFLOP/s"]
    if exp_id == "tensor-core-alignment":
        return [times(max(s["worst"].values()))]
    if exp_id == "memory-layout":
        return [times(s["copy_then_op_over_view"])]
    if exp_id == "mixed-precision":
        base, fast = ("fp32", "bf16") if "bf16" in rows else ("fp32-cpu", "bf16-cpu")
        a, b = rows[base]["time_median_s"], rows[fast]["time_median_s"]
        return [times(a / b if a >= b else b / a)]
    if exp_id == "profiler":
        top = rows[s["top"][0]]
        return [f"{s['top'][0]} took the most time: {top['extra']['share_pct']:.0f}% of"]
    if exp_id == "memory":
        return [f"{(s['rss_after_fill'] - s['rss_baseline']) / 2**20:.0f} MiB once"]
    if exp_id == "cold-start":
        return [f"{times(s['fresh_total_over_warm'])} this warm worker's median"]
    if exp_id == "allreduce":
        return [f"busbw of {s['busbw_gbs']['all-reduce']:.3g} GB/s", f"{s['ranks']} ranks"]
    if exp_id == "ddp-scaling":
        return [f"{s['efficiency_at_max']:.0%} scaling efficiency"]
    raise AssertionError(f"no headline check for {exp_id}")


def _gpu_figures(exp_id: str, s: dict[str, Any], rows: dict[str, Any]) -> list[str] | None:
    """The figure of a GPU run, where the run had one (None: the CPU path ran)."""
    gains = [v for k, v in s.items() if "_over_" in k and v]
    if exp_id == "kernel-fusion" and gains:
        return [f"ran at {times(max(gains))} the rate of"]
    if exp_id == "bandwidth" and (s.get("largest_size_gbs") or {}).get("h2d-pinned"):
        return [f"{s['largest_size_gbs']['h2d-pinned']:.3g} GB/s"]
    ratios = {
        "create-on-device": "speedup_on_device",
        "round-trips": "round_trip_penalty",
        "batching": "bmm_speedup_gpu",
    }
    if s.get(ratios.get(exp_id, "-")):
        return [times(s[ratios[exp_id]])]
    if exp_id == "in-place" and "in-place-gpu" in rows:
        return [_fmt_time(rows[c]["time_median_s"]) for c in ("in-place-gpu", "out-of-place-gpu")]
    if exp_id == "memory" and s.get("context_bytes_nvml") is not None:
        return [f"held {s['context_bytes_nvml'] / 2**20:.0f} MiB"]
    if exp_id == "memory" and "reserved_after_del" in s:
        return [f"{s['reserved_after_del'] / 2**20:.0f} MiB stayed reserved"]
    return None


def assert_headline(exp_id: str, result: dict[str, Any]) -> None:
    line = result.get("headline") or ""
    assert line and "\n" not in line, f"{exp_id}: no one-line headline: {line!r}"
    for figure in key_figures(exp_id, result):
        assert figure in line, f"{exp_id}: {figure!r} not in headline {line!r}"
