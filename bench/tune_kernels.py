"""One device call: check and time the montecarlo and blur kernel variants; table last.

python3 bench/tune_kernels.py OUTDIR
"""

from __future__ import annotations

import json
import sys
import time

import cupy as cp
import numpy as np
import torch
import torch.nn.functional as F

from gpulab.experiments import blur_filters, blur_images, blur_kernel
from gpulab.experiments import montecarlo_counts as mc

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
rows: list[tuple[str, str, float, str]] = []


def ev_time(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return float(np.median(ts))


print(torch.__version__, cp.__version__, torch.cuda.get_device_name(0), flush=True)
# ---- montecarlo
k = mc.FusedKernel(0)
print("mc regs", k.fn.num_regs, "local", k.fn.local_size_bytes, flush=True)
for n, s in ((1000, 1), (999_983, 7), (3_000_001, 11)):
    assert k.count(n, s) == mc.splitmix_count_numpy(n, s), (n, s)
inside = cp.zeros(1, dtype=cp.uint64)
for n in (10**9, 10**10):
    for per_sm in (4, 8, 16, 32):
        blocks = k.sms * per_sm

        def f():
            k.fn((blocks,), (256,), (cp.uint64(n), cp.uint64(12345), inside))

        t = ev_time(f, reps=5 if n > 1e9 else 10, warm=2)
        rows.append(("mc fused", f"n={n:.0e} blocks/SM={per_sm}", n / t / 1e9, "G samples/s"))
for chunk in (1 << 24, 1 << 26):
    mc.GPU_CHUNK = chunk
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    mc._torch_count(10**9, 1, "cuda:0")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    mc._torch_count(10**9, 2, "cuda:0")
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
    rows.append(("mc torch", f"chunk=2^{chunk.bit_length() - 1}", 1e9 / t / 1e9, "G samples/s"))
mc.GPU_CHUNK = 1 << 26
# ---- blur
img = blur_images.synthetic_image(3840, 2160)
planes = np.ascontiguousarray(np.moveaxis(img, -1, 0))
nbytes = planes.nbytes
src = cp.asarray(planes)
dst = cp.empty_like(src)
t = ev_time(lambda: cp.copyto(dst, src))
copy_gbs = 2 * nbytes / t / 1e9
rows.append(("blur copy", "image copy", 2 * nbytes / t / 1e9, f"GB/s ({t * 1e3:.4f} ms)"))
big = cp.empty(256 * 2**20, dtype=cp.float32)
big2 = cp.empty_like(big)
t = ev_time(lambda: cp.copyto(big2, big))
rows.append(("copy 1GiB", "", 2 * big.nbytes / t / 1e9, "GB/s"))
del big, big2
x = torch.from_numpy(planes).cuda()[None]
torch.backends.cudnn.allow_tf32 = False
for kind, r in (("gaussian", 2), ("gaussian", 7), ("sharpen", 2)):
    w = (
        torch.from_numpy(blur_filters.weights_2d(kind, r))
        .cuda()
        .expand(3, 1, 2 * r + 1, 2 * r + 1)
        .contiguous()
    )
    fn = lambda: F.conv2d(F.pad(x, (r,) * 4, mode="replicate"), w, groups=3)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    tt = float(np.median(ts))
    rows.append(("blur torch", f"{kind} r={r}", tt * 1e3, "ms"))
    ref = blur_filters.cpu_filter(planes.astype(np.float64), kind, r)
    for tile in ((64, 16), (64, 32), (128, 16), (128, 8), (32, 32)):
        kern = blur_kernel.BlurKernel(r, tile)
        variants = ["blur_sep", "blur_sep_v4"] if kind in blur_filters.SEPARABLE else ["blur_2d"]
        for v in variants:
            d = cp.full_like(src, cp.nan)
            launch = kern.launcher(src, d, kind, v)
            launch()
            cp.cuda.Device().synchronize()
            err = float(np.max(np.abs(cp.asnumpy(d) - ref)))
            t = ev_time(launch)
            rows.append(
                (
                    f"blur {v}",
                    f"{kind} r={r} tile={tile}",
                    t * 1e3,
                    f"ms {2 * nbytes / t / 1e9:.0f} GB/s {2 * nbytes / t / 1e9 / copy_gbs * 100:.0f}% imgcopy x{tt / t:.2f} vs torch err={err:.1e}",
                )
            )
        fn_attr = kern.module.get_function(variants[-1])
        print(
            v,
            tile,
            "regs",
            fn_attr.num_regs,
            "smem",
            fn_attr.shared_size_bytes,
            "local",
            fn_attr.local_size_bytes,
            flush=True,
        )
with open(f"{out_dir}/tune.json", "w") as fh:
    json.dump(rows, fh, indent=1)
for r in rows:
    print(f"{r[0]:<16} {r[1]:<40} {r[2]:>10.4g} {r[3]}")
