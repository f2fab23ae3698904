"""Reduction: the sum of n float32 values, our own tree-reduction kernel against the libraries.

Our kernel is kernels/reduction.cu (a CuPy RawKernel): float4 grid-stride loads, a warp-shuffle
tree, a block tree in shared memory, and the last block adding the per-block partials. Every GPU
contender reads the same device buffer (shared between torch and CuPy through DLPack). A sum
reads each element once: GB/s = n * 4 bytes / time, shown against the device's measured copy
bandwidth (bytes read + written).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import backends, ceilings, fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import streaming

KERNEL_FILE = Path(__file__).parent / "kernels" / "reduction.cu"
THREADS = 512  # must match THREADS in reduction.cu
MAX_BLOCKS = 4096
BLOCKS_PER_SM = 4  # 4 x 512 threads fills an SM's 2048 thread slots on recent GPUs
FP32_EPS = 2.0**-24


def tolerance(n: int) -> float:
    """Relative error allowed for an fp32 sum of n values in [0, 1).

    Tree and pairwise sums grow their rounding error like eps * log2(n); a thread that adds a few
    hundred values in sequence grows it by a few hundred eps at worst, but random rounding errors
    cancel to about sqrt(count) eps. 6 eps log2(n) covers both with room, and stays under
    the fp32 bound of 1e-5 (verification.TOLERANCE) up to n = 2^27 (134M).
    """
    return 6 * FP32_EPS * max(1.0, math.log2(max(n, 2)))


class OurKernel:
    """The RawKernel, compiled and loaded once per device and process, and its launch.

    A module is loaded into one device's context, so the cache is keyed by device and the
    module is created and its function looked up inside that device's context. Launch it with
    that device current (the experiment runs its contenders inside it).
    """

    _modules: dict[int, Any] = {}

    def __init__(self, device_index: int) -> None:
        import cupy as cp

        with cp.cuda.Device(device_index):
            module = OurKernel._modules.get(device_index)
            if module is None:
                module = cp.RawModule(code=KERNEL_FILE.read_text())
                OurKernel._modules[device_index] = module
            self.fn = module.get_function("reduce_sum_f32")
            sms = cp.cuda.Device(device_index).attributes["MultiProcessorCount"]
            self.max_blocks = min(MAX_BLOCKS, sms * BLOCKS_PER_SM)
            self.partials = cp.empty(MAX_BLOCKS, dtype=cp.float64)
            self.ticket = cp.zeros(1, dtype=cp.uint32)
            self.out = cp.empty(1, dtype=cp.float64)

    def __call__(self, x: Any) -> Any:
        import cupy as cp

        n = int(x.size)
        blocks = max(1, min(self.max_blocks, -(-max(n // 4, 1) // THREADS)))
        self.fn(
            (blocks,),
            (THREADS,),
            (x, cp.int64(n), self.partials, self.ticket, self.out),
        )
        return self.out


class Reduction(Experiment):
    """The `reduction` experiment: Sum n floats: our CuPy tree-reduction kernel vs torch.sum,
    cupy.sum, numpy.sum."""

    id = "reduction"
    title = "Parallel reduction (sum)"
    summary = "Sum n floats: our CuPy tree-reduction kernel vs torch.sum, cupy.sum, numpy.sum."
    lesson = "parallel-patterns"
    params = ParamSet(
        (
            Int("n", 100_000_000, "elements to sum on the GPU", unit="elements", min=1, max=4e9),
            Int(
                "cpu_n",
                20_000_000,
                "elements for the CPU contenders (at most n): the CPU is ~20x slower",
                unit="elements",
                min=1,
                max=4e9,
            ),
        )
    )
    contenders = (
        Contender("ours", "our kernel (kernels/reduction.cu)", "cupy"),
        Contender("torch", "torch.sum (GPU)", "torch-cuda"),
        Contender("cupy", "cupy.sum", "cupy"),
        Contender("numpy", "numpy.sum (CPU)", "numpy"),
        Contender("torch-cpu", "torch.sum (CPU)", "torch-cpu"),
    )
    bench_params = ({"n": 100_000_000, "cpu_n": 20_000_000},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import numpy as np

        n = int(params["n"])
        cpu_n = min(n, int(params["cpu_n"]))
        result = self.new_result(ctx, params)
        todo = result_rows.todo(self, result)
        on_gpu = [c for c in todo if c.backend in ("torch-cuda", "cupy")]
        host = (n * 4 if on_gpu else 0) + (cpu_n * 4 if not on_gpu or cpu_n != n else 0)
        fits.require_host_fit(host * 1.05 + fits.HOST_SLACK_BYTES, f"reduction over n={n:,}")
        if on_gpu:
            fits.require_fit(ctx, n * 4 * 1.2, f"reduction over n={n:,}")
        p = ceilings.peaks(ctx)
        rng = np.random.default_rng()
        gbs: dict[str, float] = {}

        host_gpu = rng.random(n, dtype=np.float32) if on_gpu else None
        if host_gpu is not None and cpu_n == n:
            host_cpu = host_gpu
        else:
            host_cpu = rng.random(cpu_n, dtype=np.float32)
        refs = {cpu_n: float(np.sum(host_cpu, dtype=np.float64))}
        if host_gpu is not None:
            refs[n] = float(np.sum(host_gpu, dtype=np.float64))
        xt = xc = None
        if on_gpu:
            if ctx.has_cuda:
                import torch

                xt = torch.from_numpy(host_gpu).to(ctx.torch_device)
            if ctx.has_cupy:
                import cupy as cp

                with cp.cuda.Device(ctx.device_index):
                    # The same memory: every GPU contender reads one buffer.
                    xc = cp.from_dlpack(xt) if xt is not None else cp.asarray(host_gpu)
        with contextlib.ExitStack() as stack:
            if ctx.has_cupy and on_gpu:
                import cupy as cp

                # The contenders run with the GPU current: CuPy arrays and our kernel's module
                # belong to one device.
                stack.enter_context(cp.cuda.Device(ctx.device_index))
            for i, c in enumerate(todo):
                ctx.check_cancelled()
                gpu = c.backend in ("torch-cuda", "cupy")
                size = n if gpu else cpu_n
                ctx.progress(i / len(todo), f"{c.label}: {size:,} elements")
                fn, read = self._contender(ctx, c.id, xt, xc, host_cpu)
                value = float(read(fn()))  # the checked run
                ref = refs[size]
                err = abs(value - ref) / ref if ref else abs(value)
                result.verdicts.append(
                    Verdict.check(
                        c.id,
                        err,
                        tolerance(size),
                        metric="relative error of the sum",
                        reference="float64 sum on the CPU (6 eps log2 n)",
                        size=f"{size:g}",
                        dtype="fp32",
                    )
                )
                timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend))
                pk = ceilings.peak_here(p, c.backend, "copy")
                m = result_rows.emit(
                    ctx,
                    result,
                    row(
                        c.id,
                        f"{size:g}",
                        timing,
                        work=size * 4,
                        unit="GB/s",
                        scale=1e9,
                        dtype="fp32",
                        peak=pk,
                        peak_name="memory copy (read + written)" if pk else "",
                        bytes_counted="n * 4 (each element read once)",
                        value=value,
                    ),
                )
                gbs[c.id] = m.throughput or 0.0
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "cpu_n": cpu_n, "gbs": gbs}
        if "ours" in gbs and gbs.get("torch"):
            result.summary["ours_vs_torch_sum"] = gbs["ours"] / gbs["torch"]
        cp_gbs = ceilings.peak(p, "copy") if p is not None and not p.cpu else None
        if cp_gbs:
            result.summary["copy_gbs"] = float(cp_gbs)
        result.explanation = (
            "A sum reads every element once and does one addition per 4 bytes, so the best any "
            "reduction can do is stream memory at full speed: the % column compares each with the "
            "device's own copy bandwidth. The tree shape is what makes it parallel: each thread "
            "sums its share in registers, a warp combines 32 values in 5 shuffle steps, a block "
            "combines its warps through shared memory, and only one value per block goes back "
            "to memory. A hand-written kernel can match the library sums because there is "
            "nothing clever left to do once the loads are wide and enough are in flight; the "
            "CPU is limited by its own, much lower, memory bandwidth."
        )
        return self.finish(result)

    def _contender(self, ctx: Context, cid: str, xt: Any, xc: Any, host: Any) -> tuple[Any, Any]:
        """(fn to time, read(fn's return) -> Python float)."""
        if cid == "numpy":
            import numpy as np

            return (lambda: np.sum(host)), float
        if cid == "torch-cpu":
            import torch

            t = torch.from_numpy(host)
            return (lambda: torch.sum(t)), lambda r: r.item()
        if cid == "torch":
            import torch

            return (lambda: torch.sum(xt)), lambda r: r.item()
        if cid == "cupy":
            import cupy as cp

            return (lambda: cp.sum(xc)), lambda r: float(r.get())
        kernel = OurKernel(ctx.device_index)
        kernel.out.fill(math.nan)  # poisoned: a kernel that never writes its result fails

        return (lambda: kernel(xc)), lambda r: float(r.get()[0])

    def headline(self, result: Result) -> str:
        """One line: the fastest reduction's GB/s, its share of the copy bandwidth and its lead
        over NumPy."""
        return streaming(self, result)


EXPERIMENT = Reduction()
