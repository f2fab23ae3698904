"""Why compile-fused's compiled chain ran slower than eager on an H200 (bench note, issue 31).

    python bench/probe_compile_fused.py [--out FILE]

Times, at the check's 32M-element input on the GPU, the eager chain against torch.compile'd
versions of it: compiled for that size alone (static), compiled after the check's six sizes
(the size marked dynamic, as the learner's function is), with mark_dynamic up front, and with
`dynamic=False`; each as the median of 20 calls back to back, and lists the CUDA kernels one
call of each launched (torch.profiler), so the fused code's shape can be read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def chain(x, w):
    y = x * w + 0.5
    scale = y[:1].abs() + 1.0
    y = y / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


def _time(f, x, w, calls=20, rounds=7):
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            f(x, w)
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / calls)
    return statistics.median(out)


def _kernels(f, x, w):
    from torch.profiler import ProfilerActivity, profile

    f(x, w)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        f(x, w)
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        dev = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if dev and e.key and not e.key.startswith(("aten::", "cuda", "Torch-Compiled", "Call")):
            rows.append({"kernel": e.key[:120], "us": round(dev, 1), "count": e.count})
    cpu_total = sum(e.self_cpu_time_total for e in prof.key_averages())
    return {"kernels": rows, "host_us": round(cpu_total, 1)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    args = p.parse_args()
    dev = "cuda"
    n = 1 << 25
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.rand(n, device=dev, generator=g) * 6 - 3
    w = torch.rand(n, device=dev, generator=g) * 1.5 + 0.5
    report: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "n": n}
    report["eager_ms"] = _time(chain, x, w) * 1e3
    report["eager"] = _kernels(chain, x, w)
    variants = {}
    torch._dynamo.reset()
    static = torch.compile(chain)
    static(x, w)
    variants["static (this size only)"] = static
    torch._dynamo.reset()
    seq = torch.compile(chain)
    for m in (1, 33, 1025, 4097, 65537, 300_001):
        seq(torch.rand(m, device=dev), torch.rand(m, device=dev))
    seq(x, w)
    variants["after the check's six sizes (dynamic)"] = seq
    torch._dynamo.reset()
    nodyn = torch.compile(chain, dynamic=False)
    for m in (1, 33):
        nodyn(torch.rand(m, device=dev), torch.rand(m, device=dev))
    nodyn(x, w)
    variants["dynamic=False"] = nodyn
    torch._dynamo.reset()
    auto = torch.compile(chain, mode="max-autotune-no-cudagraphs")
    auto(x, w)
    variants["max-autotune-no-cudagraphs"] = auto
    for name, f in variants.items():
        ms = _time(f, x, w) * 1e3
        report[name] = {"ms": ms, "speedup": report["eager_ms"] / ms, **_kernels(f, x, w)}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
