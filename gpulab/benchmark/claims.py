"""Claims the lessons make, as bench targets: each one a lesson states, checked on the bench's own runs.

- cold-start: a fresh process's first result costs >= 100x the warm worker's median (lesson 07).
- managed-memory: page faults on first touch cost >= 2x plain device memory; after a prefetch the
  kernel runs within 20% of plain memory (lesson 03).
- profiler (bf16): the matmul kernel measured above the fp32 CUDA-core ceiling, i.e. on tensor
  cores (lesson 14).
- dtypes: fp8 (scaled, e4m3) at >= 1.3x bf16's matmul rate (lesson 11; 2x on the datasheet).
"""

from __future__ import annotations

from typing import Any

from gpulab.benchmark.targets import finished, judge


def claims_comparisons(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Comparisons that check the lessons' claims against the runs (e.g. cold start vs warm)."""
    out: list[dict[str, Any]] = []
    for exp, s in finished(runs):
        if exp == "cold-start" and s.get("device") == "gpu":
            out.append(
                judge(
                    "cold-start: fresh process to first result / warm median",
                    ">= 100x",
                    s.get("fresh_total_over_warm"),
                    100.0,
                    steps_s=s.get("fresh_steps_s"),
                    warm_median_s=s.get("warm_median_s"),
                )
            )
        if exp == "managed-memory":
            gbs = s.get("gbs", {})
            dev, first, pre = (
                gbs.get(k) for k in ("device", "managed-first-touch", "managed-prefetched")
            )
            out.append(
                judge(
                    "managed-memory: plain device GB/s / first-touch GB/s",
                    ">= 2x",
                    dev / first if dev and first else None,
                    2.0,
                    gbs=gbs,
                )
            )
            out.append(
                judge(
                    "managed-memory: prefetched GB/s / plain device GB/s",
                    ">= 0.8",
                    pre / dev if pre and dev else None,
                    0.8,
                    gbs=gbs,
                )
            )
        probe = s.get("probe") or {}
        ceiling = s.get("fp32_cuda_core_ceiling_tflops")
        if exp == "profiler" and s.get("dtype") == "bf16":
            out.append(
                judge(
                    "profiler bf16: matmul TFLOP/s / fp32 CUDA-core ceiling",
                    ">= 1.15 (tensor cores)",
                    probe["tflops"] / ceiling if probe.get("tflops") and ceiling else None,
                    1.15,
                    kernel=probe.get("kernel"),
                    tflops=probe.get("tflops"),
                )
            )
        if exp == "dtypes" and s.get("device") == "gpu":
            out.append(
                judge(
                    "dtypes: fp8 (e4m3, scaled) / bf16 matmul TFLOP/s",
                    ">= 1.3x",
                    s.get("fp8_over_bf16"),
                    1.3,
                    tflops=s.get("matmul_tflops"),
                )
            )
    return out
