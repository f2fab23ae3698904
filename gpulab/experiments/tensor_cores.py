"""Did a kernel use tensor cores? Two answers: what its name says, and what a measurement shows.

Names are a hint, not a proof: on an H100 plain fp32 runs `sm80_xmma_gemm_f32f32_..._ffma_...`
(CUDA cores, despite "xmma"), while bf16 runs `nvjet_sm90_tst_...` with none of the words older
guides teach. The reliable signs in a name are the instruction (hmma, wgmma/gmma, dmma, imma on
tensor cores; ffma, simt on CUDA cores) and the dtype. The measured fact: time one matmul of
known shape, and compare its TFLOP/s with the calibrated fp32 rate (cuBLAS with TF32 off, which
runs on CUDA cores). A rate well above that ceiling is only possible on tensor cores.
"""

from __future__ import annotations

import re
from typing import Any

from gpulab.experiments import backends

# Checked first: an ffma/simt kernel is on CUDA cores whatever else its name says ("xmma").
CUDA_CORE_SIGNS = ("ffma", "simt", "sgemm", "dgemm_")
TENSOR_SIGNS = (
    "hmma",
    "wgmma",
    "gmma",
    "dmma",
    "imma",
    "qmma",
    "tensorop",
    "16816",
    "1688",
    "884",
    "tf32",
    "bf16",
    "f16",
    "e4m3",
    "e5m2",
)
# cuBLAS's nvjet kernels carry the operand types as a three-letter code (nvjet_sm90_tst_...):
# t tf32/bf16, h fp16, b bf16, e fp8 mean tensor cores; sss (all fp32) does not say.
NVJET = re.compile(r"nvjet_sm\d+_([a-z]{3})_")
MATMUL_WORDS = ("gemm", "nvjet", "cutlass", "matmul", "_mma")
MARGIN = 1.15  # a rate this far above the CUDA-core ceiling cannot come from CUDA cores


def by_name(name: str) -> tuple[str, str]:
    """("yes" | "no" | "unclear" | "n/a", the sign that decided it)."""
    low = name.lower()
    for sign in CUDA_CORE_SIGNS:
        if sign in low:
            return "no", sign
    nv = NVJET.search(low)
    if nv and any(c in "thbe" for c in nv.group(1)):
        return "yes", f"nvjet type code {nv.group(1)}"
    for sign in TENSOR_SIGNS:
        if sign in low:
            return "yes", sign
    if any(w in low for w in MATMUL_WORDS):
        return "unclear", "a matmul kernel whose name names no instruction or dtype"
    return "n/a", "not a matmul kernel"


def by_rate(tflops: float, fp32_ceiling: float | None) -> tuple[str, str]:
    """The measured verdict of a matmul at `tflops` against the fp32 CUDA-core ceiling."""
    if not fp32_ceiling:
        return "unclear", f"{tflops:.3g} TFLOP/s, and no calibrated fp32 rate to compare with"
    if tflops > MARGIN * fp32_ceiling:
        return "yes", (
            f"{tflops:.3g} TFLOP/s, {tflops / fp32_ceiling:.1f}x the fp32 CUDA-core ceiling "
            f"({fp32_ceiling:.3g}): only tensor cores go that fast"
        )
    return "no", (
        f"{tflops:.3g} TFLOP/s, not above the fp32 CUDA-core ceiling ({fp32_ceiling:.3g}): "
        "CUDA cores (or a product too small to tell)"
    )


def device_us(evt: Any) -> float:
    """The profiler event's own device time in microseconds, whatever torch version named it."""
    for attr in ("self_device_time_total", "self_cuda_time_total", "device_time_total"):
        value = getattr(evt, attr, None)
        if value:
            return float(value)
    return 0.0


def is_kernel(evt: Any) -> bool:
    """A device-side event (a kernel, memcpy or memset), not a CPU operator."""
    return str(getattr(evt, "device_type", "CPU")).endswith("CUDA")


def probe(torch: Any, dev: Any, m: int, k: int, n: int, dtype: str) -> dict[str, Any]:
    """Profile one m x k x n matmul in `dtype` (fp32, tf32, bf16, fp16): its main kernel's name
    and its TFLOP/s from that kernel's own device time."""
    from torch.profiler import ProfilerActivity, profile

    td = torch.float32 if dtype in ("fp32", "tf32") else backends.torch_dtype(dtype)
    a = torch.randn(m, k, device=dev, dtype=td)
    b = torch.randn(k, n, device=dev, dtype=td)
    calls = 5
    with backends.tf32_mode(dtype == "tf32"):
        torch.mm(a, b)  # the cuBLAS handle and the kernel choice, outside the profile
        torch.cuda.synchronize(dev)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                torch.mm(a, b)
            torch.cuda.synchronize(dev)
    kernels = [e for e in prof.key_averages() if is_kernel(e) and device_us(e) > 0]
    if not kernels:
        return {}
    top = max(kernels, key=device_us)
    per_call_s = device_us(top) / 1e6 / max(1, top.count)
    return {
        "kernel": top.key,
        "shape": [m, k, n],
        "dtype": dtype,
        "per_call_s": per_call_s,
        "tflops": 2.0 * m * k * n / per_call_s / 1e12,
    }
