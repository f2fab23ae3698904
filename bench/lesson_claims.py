"""GPU measurements behind statements of lessons 14 and 18 to 24 that the expert review asked to
measure (or re-measure) on this machine, each printed and kept in one JSON.

  littles-law      lesson 14: a copy with K = 1, 2, 4, 8 independent loads per thread at full
                   occupancy, its GB/s and the DRAM latency Little's law implies (CuPy)
  stream-pool      lesson 18: distinct cudaStream_t among 40 torch.cuda.Stream() objects
  pin-per-batch    lesson 18: x.to(dev) against x.pin_memory().to(dev, non_blocking=True) against
                   a copy into a reused pinned buffer, 64 MiB batches (host wall time per batch)
  readbacks        lesson 23: per readback, the profiler's aten::_local_scalar_dense and
                   cudaStreamSynchronize counts
  index-put        lesson 24: distinct results in 10 runs of index_add_, scatter_add_ and
                   index_put_(accumulate=True), 4M values into 256 bins
  triton-launch    lesson 21 and exercise 50: a Triton add at 256 MiB and 1 GiB a call, timed
                   back to back, each call from an idle GPU, and behind a 200 us spin like the
                   grader's, against a device copy timed the same ways; and the host's launch
                   cost of a small Triton add against torch.add
  mlp-compile      lesson 22: MLP 4 x Linear(1024)+ReLU at batch 32, eager / compiled /
                   reduce-overhead, wall time per call back to back and synchronized, and the GPU
                   kernel time per call from torch.profiler, at fp32_precision "ieee" and "tf32"
  warp-aggregated  lesson 20: one atomicAdd per element against one per distinct key a warp
                   (__match_any_sync), on a spread and a skewed 256-bin histogram (CuPy)

    python bench/lesson_claims.py --json bench/results/lesson-claims-h200.json
    python bench/lesson_claims.py --only triton-launch --only mlp-compile
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CLAIMS: dict[str, Callable[[], dict[str, Any]]] = {}


def claim(name: str) -> Callable[[Callable[[], dict[str, Any]]], Callable[[], dict[str, Any]]]:
    def register(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        CLAIMS[name] = fn
        return fn

    return register


def _events_us(fn: Callable[[], Any], calls: int, before: Callable[[], Any] | None = None) -> float:
    """Median microseconds of `fn` between two CUDA events, each call alone; `before` (a spin)
    is queued ahead of the start event so the host's launch hides behind it."""
    import torch

    times = []
    for _ in range(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        if before is not None:
            before()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def _back_to_back_us(fn: Callable[[], Any], calls: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3 / calls


@claim("littles-law")
def littles_law() -> dict[str, Any]:
    import cupy as cp

    src = r"""
    extern "C" __global__ void copy(const float* x, float* y) {
        long long base = (long long)blockIdx.x * blockDim.x * K + threadIdx.x;
        float v[K];
        #pragma unroll
        for (int j = 0; j < K; ++j) v[j] = x[base + j * blockDim.x];
        #pragma unroll
        for (int j = 0; j < K; ++j) y[base + j * blockDim.x] = v[j];
    }"""
    n = 1 << 28  # 1 GiB of float32 read, 1 GiB written
    x, y = cp.random.random(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)
    attrs = cp.cuda.Device().attributes
    sms, threads = attrs["MultiProcessorCount"], attrs["MaxThreadsPerMultiProcessor"]
    rows = []
    for k in (1, 2, 4, 8, 16):
        kern = cp.RawModule(code=src, options=(f"-DK={k}",)).get_function("copy")
        grid = n // (256 * k)
        kern((grid,), (256,), (x, y))
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(10):
            kern((grid,), (256,), (x, y))
        stop.record()
        stop.synchronize()
        s = cp.cuda.get_elapsed_time(start, stop) / 1e3 / 10
        read = 4 * n / s
        in_flight = sms * threads * k * 4
        rows.append(
            {
                "loads_per_thread": k,
                "copy_gbs": 2 * read / 1e9,
                "loads_in_flight_per_sm_kib": threads * k * 4 / 1024,
                "implied_latency_ns": in_flight / read * 1e9,
            }
        )
    assert bool(cp.array_equal(x, y))
    return {"sms": sms, "threads_per_sm": threads, "rows": rows}


@claim("stream-pool")
def stream_pool() -> dict[str, Any]:
    import torch

    handles = [torch.cuda.Stream().cuda_stream for _ in range(40)]
    return {
        "streams_made": 40,
        "distinct": len(set(handles)),
        "33rd_equals_1st": handles[32] == handles[0],
    }


@claim("pin-per-batch")
def pin_per_batch() -> dict[str, Any]:
    import torch

    batches = [torch.randn(16 << 20) for _ in range(8)]  # 64 MiB each, pageable
    pinned = torch.empty(16 << 20, pin_memory=True)

    def plain(b: torch.Tensor) -> torch.Tensor:
        return b.to("cuda")

    def pin_each(b: torch.Tensor) -> torch.Tensor:
        return b.pin_memory().to("cuda", non_blocking=True)

    def reuse(b: torch.Tensor) -> torch.Tensor:
        pinned.copy_(b)
        return pinned.to("cuda", non_blocking=True)

    out: dict[str, Any] = {"batch_mib": 64}
    for name, fn in (("to_device", plain), ("pin_memory_per_batch", pin_each), ("reused", reuse)):
        for b in batches[:2]:
            fn(b)
        torch.cuda.synchronize()
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            for b in batches:
                fn(b)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / len(batches) * 1e3)
        out[f"{name}_ms"] = statistics.median(times)
    return out


@claim("readbacks")
def readbacks() -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    t = torch.randn(1 << 16, device="cuda")
    mask = t > 0
    ops: dict[str, Callable[[], Any]] = {
        "item": lambda: t.sum().item(),
        "float": lambda: float(t.sum()),
        "bool": lambda: bool(t.sum() > 0),
        "tolist": lambda: t[:8].tolist(),
        "cpu": lambda: t.cpu(),
        "cpu_numpy": lambda: t.cpu().numpy(),
        "nonzero": lambda: torch.nonzero(t),
        "mask_index": lambda: t[mask],
        "unique": lambda: torch.unique(t[:1024]),
    }
    out = {}
    for name, fn in ops.items():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
        names = [e.name for e in prof.events()]
        out[name] = {
            "local_scalar_dense": names.count("aten::_local_scalar_dense"),
            "cudaStreamSynchronize": names.count("cudaStreamSynchronize"),
            "cudaMemcpyAsync": names.count("cudaMemcpyAsync"),
        }
    return out


@claim("index-put")
def index_put() -> dict[str, Any]:
    import torch

    n, bins = 1 << 22, 256
    src = torch.randn(n, device="cuda") + 0.5
    idx = torch.randint(0, bins, (n,), device="cuda")

    def distinct(fn: Callable[[], torch.Tensor]) -> int:
        return len({fn().cpu().numpy().tobytes() for _ in range(10)})

    def zeros() -> torch.Tensor:
        return torch.zeros(bins, device="cuda")

    return {
        "index_add_": distinct(lambda: zeros().index_add_(0, idx, src)),
        "scatter_add_": distinct(lambda: zeros().scatter_add_(0, idx, src)),
        "index_put_accumulate": distinct(lambda: zeros().index_put_((idx,), src, accumulate=True)),
        "runs": 10,
    }


@claim("triton-launch")
def triton_launch() -> dict[str, Any]:
    import torch
    import triton
    import triton.language as tl

    from gpulab.core.lead import spin

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = offsets < n
        x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
        y = tl.load(y_ptr + offsets, mask=inside, other=0.0)
        tl.store(out_ptr + offsets, x + y, mask=inside)

    lead = spin("torch")
    out: dict[str, Any] = {"triton": triton.__version__, "torch": torch.__version__}
    for label, moved in (("256MiB", 256 << 20), ("1GiB", 1 << 30)):
        n = moved // 12  # 8 bytes read and 4 written per element
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        z = torch.empty_like(x)
        src, dst = torch.empty(moved // 8, device="cuda"), torch.empty(moved // 8, device="cuda")

        def add(x: Any = x, y: Any = y, z: Any = z, n: int = n) -> None:
            add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)

        def copy(src: Any = src, dst: Any = dst) -> None:
            dst.copy_(src)  # reads and writes `moved` bytes in all

        row = {}
        for name, fn in (("triton_add", add), ("device_copy", copy)):
            fn()
            for how, us in (
                ("back_to_back", _back_to_back_us(fn, 20)),
                ("idle_gpu", _events_us(fn, 15)),
                ("behind_spin", _events_us(fn, 15, before=lead)),
            ):
                row[f"{name}_{how}_gbs"] = moved / (us * 1e-6) / 1e9
        for how in ("back_to_back", "idle_gpu", "behind_spin"):
            row[f"fraction_of_copy_{how}"] = (
                row[f"triton_add_{how}_gbs"] / row[f"device_copy_{how}_gbs"]
            )
        out[label] = row
        del x, y, z, src, dst
        torch.cuda.empty_cache()
    n = 1 << 12
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    for name, fn in (
        ("triton_add", lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)),
        ("torch_add", lambda: torch.add(x, y, out=z)),
    ):
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            fn()
        host_us = (time.perf_counter() - t0) / 2000 * 1e6
        torch.cuda.synchronize()
        out[f"{name}_host_us_per_launch"] = host_us
    return out


@claim("mlp-compile")
def mlp_compile() -> dict[str, Any]:
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    out: dict[str, Any] = {"torch": torch.__version__}
    x = torch.randn(32, 1024, device="cuda")
    for precision in ("ieee", "tf32"):
        torch.backends.cuda.matmul.fp32_precision = precision
        torch._dynamo.reset()
        layers: list[torch.nn.Module] = []
        for _ in range(4):
            layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers).cuda().eval()
        modes = {
            "eager": model,
            "compiled": torch.compile(model),
            "reduce_overhead": torch.compile(model, mode="reduce-overhead"),
        }
        rows = {}
        with torch.no_grad():
            for name, fn in modes.items():
                for _ in range(5):
                    fn(x)
                torch.cuda.synchronize()
                back = _back_to_back_us(lambda fn=fn: fn(x), 200)
                t0 = time.perf_counter()
                for _ in range(200):
                    fn(x)
                    torch.cuda.synchronize()
                synced = (time.perf_counter() - t0) / 200 * 1e6
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(20):
                        fn(x)
                    torch.cuda.synchronize()
                on_gpu = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
                kernel_us = sum(e.device_time_total for e in on_gpu) / 20  # a call's kernels
                rows[name] = {
                    "back_to_back_us": back,
                    "synchronized_us": synced,
                    "gpu_kernel_us": kernel_us,
                }
        out[precision] = rows
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    return out


@claim("warp-aggregated")
def warp_aggregated() -> dict[str, Any]:
    import cupy as cp

    src = r"""
    extern "C" __global__ void per_lane(const int* x, unsigned* hist, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) atomicAdd(&hist[x[i]], 1u);
    }
    extern "C" __global__ void per_warp(const int* x, unsigned* hist, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        int lane = threadIdx.x & 31;
        int key = i < n ? x[i] : -1;                     // every lane reaches the match
        unsigned peers = __match_any_sync(0xffffffffu, key);
        if (key >= 0 && lane == __ffs(peers) - 1) atomicAdd(&hist[key], __popc(peers));
    }"""
    mod = cp.RawModule(code=src)
    n = 1 << 26
    rng = cp.random.default_rng(0)
    inputs = {
        "spread": rng.integers(0, 256, n, dtype=cp.int32),
        "skewed": cp.where(rng.random(n) < 0.95, 7, rng.integers(0, 256, n)).astype(cp.int32),
    }
    out: dict[str, Any] = {}
    for label, x in inputs.items():
        want = cp.bincount(x, minlength=256).astype(cp.uint32)
        row = {}
        for name in ("per_lane", "per_warp"):
            kern = mod.get_function(name)
            hist = cp.zeros(256, dtype=cp.uint32)
            kern(((n + 255) // 256,), (256,), (x, hist, cp.int64(n)))
            assert bool(cp.array_equal(hist, want)), name
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(10):
                kern(((n + 255) // 256,), (256,), (x, hist, cp.int64(n)))
            stop.record()
            stop.synchronize()
            row[f"{name}_us"] = cp.cuda.get_elapsed_time(start, stop) * 1e3 / 10
        out[label] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(CLAIMS), default=None)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--list", action="store_true", help="name the claims and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(CLAIMS)))
        return 0
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: these measurements need a GPU", file=sys.stderr)
        return 2
    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    for name in args.only or sorted(CLAIMS):
        t0 = time.perf_counter()
        try:
            results[name] = CLAIMS[name]()
        except Exception as err:  # noqa: BLE001 - one claim's failure must not lose the others
            results[name] = {"error": f"{type(err).__name__}: {err}"}
        print(f"{name} ({time.perf_counter() - t0:.1f} s):")
        print(json.dumps(results[name], indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
