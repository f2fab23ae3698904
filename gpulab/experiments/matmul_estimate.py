"""How long a CPU contender of the matmul race would take at a size, before it runs.

A CPU contender skips a size estimated to take over CPU_RUN_LIMIT_S a call (and says so). The
estimate scales the fastest run of the largest size measured by n^3; a small size is mostly
overhead and noise, so when that estimate says "skip", one call at a larger probe size (about
PROBE_S, up to PROBES times) checks it first: a noisy n=256 timing once estimated 65 s for an
n=4096 product that took 1.45 s, and the learner's NumPy row was dropped.
"""

from __future__ import annotations

import time
from typing import Any

CPU_RUN_LIMIT_S = 20.0
PROBE_S = 1.0
PROBES = 2


def estimate_s(cid: str, dtype: str, n: int, times: dict[tuple[str, str, int], float]) -> float:
    """Seconds of one call at n from the largest size measured ((cid, dtype, n) -> seconds)."""
    known = [(k[2], t) for k, t in times.items() if k[0] == cid and k[1] == dtype]
    if not known:
        return 0.0
    m, t = max(known)
    return t * (n / m) ** 3


def probe(ctx: Any, c: Any, dtype: str, n: int, times: dict[tuple[str, str, int], float]) -> float:
    """Check a "skip" estimate with one call at a larger size (about PROBE_S), up to PROBES
    times; the probes' times join `times`, and the refined estimate is returned."""
    est = estimate_s(c.id, dtype, n, times)
    for _ in range(PROBES):
        known = [(k[2], t) for k, t in times.items() if k[0] == c.id and k[1] == dtype]
        if not known or est <= CPU_RUN_LIMIT_S:
            break
        m0, t0 = max(known)
        size = min(int(m0 * (PROBE_S / max(t0, 1e-9)) ** (1 / 3)) // 16 * 16, n - 16)
        if size <= m0:
            break  # the largest size measured already took PROBE_S: its estimate stands
        ctx.progress(0.0, f"{c.label} {dtype}: probing n={size} for an estimate")
        times[(c.id, dtype, size)] = probe_call(c.id, dtype, size)
        est = estimate_s(c.id, dtype, n, times)
        ctx.log(f"{c.id} {dtype} n={n}: estimated {est:.2g} s from a probe at n={size}")
    return est


def probe_call(cid: str, dtype: str, n: int) -> float:
    """Seconds of one product at size n by a CPU contender (inputs made outside the time)."""
    import numpy as np

    npd = np.float64 if dtype == "fp64" else np.float32
    a = np.random.default_rng(n).standard_normal((n, n)).astype(npd)
    if cid == "numpy":
        t0 = time.perf_counter()
        np.matmul(a, a)
        return time.perf_counter() - t0
    import torch

    ta = torch.from_numpy(a).to(
        {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    )
    t0 = time.perf_counter()
    torch.mm(ta, ta)
    return time.perf_counter() - t0
