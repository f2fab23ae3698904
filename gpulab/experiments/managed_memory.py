"""Managed (unified) memory: page faults on first touch against a prefetch, against plain memory.

x lives in managed memory (cudaMallocManaged through CuPy) and is written by the CPU first, so its
pages sit in host memory. A kernel then reads x and writes y (plain device memory), three ways:
on plain device memory (the ceiling); on managed x straight after the host wrote it, so every
page the kernel touches faults and migrates over the bus while the kernel waits; and on managed x
after cudaMemPrefetchAsync moved it to the GPU in bulk (the prefetch is timed on its own row).
The size is capped at min(1 GiB, 10% of free GPU memory): managed memory larger than the GPU
can hold makes the driver evict and fault pages back and forth, which can stall the GPU for
minutes. Bytes counted: 8 per element (read x, write y). Needs CuPy: there is no CPU path.
"""

from __future__ import annotations

import ctypes
from typing import Any

from gpulab.core.devices import Inventory
from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Measurement, Result, Verdict
from gpulab.experiments import ceilings, fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.occupancy import SOURCE
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import times

MIB = 2**20
CAP_BYTES = 2**30
CAP_SHARE = 0.10  # of free device memory
BLOCK = 256


def capped_bytes(asked: int, free: int | None) -> int:
    """The managed buffer's size: the request, at most 1 GiB and 10% of free memory."""
    cap = CAP_BYTES if free is None else min(CAP_BYTES, int(CAP_SHARE * free))
    return max(4 * BLOCK, min(asked, cap)) // 4 * 4


class ManagedMemory(Experiment):
    """The `managed-memory` experiment: A kernel on managed memory the CPU just wrote: faulting,
    prefetched, or plain."""

    id = "managed-memory"
    title = "Managed memory: page faults vs prefetch"
    summary = "A kernel on managed memory the CPU just wrote: faulting, prefetched, or plain."
    lesson = "cuda-programming-model"
    params = ParamSet(
        (
            Int(
                "mib",
                1024,
                "managed buffer size (capped at 1 GiB and 10% of free GPU memory)",
                unit="MiB",
                min=1,
                max=1024,
            ),
            Int(
                "runs",
                5,
                "first-touch and prefetch runs (each rewrites x on the host)",
                min=1,
                max=50,
            ),
        )
    )
    contenders = (
        Contender("device", "plain device memory", "cupy", help="cupy.empty: the ceiling"),
        Contender(
            "managed-first-touch",
            "managed, first GPU touch (page faults)",
            "cupy",
            help="the host wrote x last: each page faults over to the GPU",
        ),
        Contender(
            "prefetch",
            "cudaMemPrefetchAsync to the GPU",
            "cupy",
            help="the bulk migration itself",
        ),
        Contender(
            "managed-prefetched",
            "managed, after the prefetch",
            "cupy",
            help="the same kernel once the pages are on the GPU",
        ),
    )
    bench_params = ({"mib": 1024, "runs": 5},)
    bench_suites = ("full",)

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        """Refuse to start without CuPy on an NVIDIA GPU (managed memory is allocated through
        it)."""
        if not inventory.available("cupy"):
            why = inventory.reason("cupy") or inventory.gpu_reason or "no GPU"
            raise ExperimentError(
                f"managed-memory allocates through CuPy and needs an NVIDIA GPU with CuPy: {why}"
            )

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        result = self.new_result(ctx, params)
        free = fits.free_device_memory(ctx)
        nbytes = capped_bytes(int(params["mib"]) * MIB, free[0] if free else None)
        if nbytes < int(params["mib"]) * MIB:
            ctx.log(
                f"managed buffer capped at {fits.fmt_bytes(nbytes)} (1 GiB and 10% of free memory)"
            )
        # x (managed), plain, y and the check's 2 * plain: well inside free memory by the cap above.
        fits.require_fit(ctx, 4 * nbytes + fits.SLACK_BYTES, f"managed-memory at {nbytes:,} B")
        import cupy as cp
        import numpy as np

        n = nbytes // 4
        runs = 1 if ctx.quick else int(params["runs"])
        p = ceilings.peaks(ctx)
        pk = ceilings.peak_here(p, "cupy", "copy")
        kernel = cp.RawKernel(SOURCE, "scale")
        grid = (n + BLOCK - 1) // BLOCK
        a = np.float32(2.0)  # exact: y must equal 2 * x bit for bit
        size = fits.fmt_bytes(nbytes)
        dev = cp.cuda.Device(ctx.device_index)
        with dev:
            concurrent = int(dev.attributes.get("ConcurrentManagedAccess", 0))
            why = (
                "this GPU or OS has no concurrent managed access (Windows, WSL or a GPU before "
                "Pascal): managed memory moves at kernel launch and cannot be prefetched"
            )
            # The current stream throughout: the timer's events are recorded on it too.
            stream = cp.cuda.get_current_stream()
            y = cp.empty(n, dtype=cp.float32)
            plain = cp.random.random(n, dtype=cp.float32)
            mem = cp.cuda.malloc_managed(nbytes)
            x = cp.ndarray((n,), dtype=cp.float32, memptr=mem)
            host = np.ctypeslib.as_array((ctypes.c_float * n).from_address(mem.ptr))

            def launch(src: Any) -> None:
                kernel((grid,), (BLOCK,), (src, y, a, np.int64(n), np.int32(1)))  # current stream

            def host_write(value: float) -> None:
                """The CPU writes every page of x: they now live in host memory."""
                stream.synchronize()
                for s in ctx.blocks(n, 1 << 24):
                    host[s] = value

            def prefetch() -> None:
                cp.cuda.runtime.memPrefetchAsync(mem.ptr, nbytes, ctx.device_index, stream.ptr)

            def timed(fn: Any) -> float:
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(stream)
                fn()
                end.record(stream)
                end.synchronize()
                return cp.cuda.get_elapsed_time(start, end) / 1e3

            ctx.progress(0.05, f"plain device memory, {size}")
            timing = ctx.timer.measure(lambda: launch(plain), sync="cupy")
            stream.synchronize()
            self._check(result, "device", y, plain * 2)
            device = result_rows.emit(ctx, result, self._row("device", size, timing, n, pk))
            faults: list[float] = []
            moves: list[float] = []
            after: list[float] = []
            for i in range(runs):
                ctx.progress(0.1 + 0.85 * i / runs, f"run {i + 1} of {runs}: host write, kernel")
                host_write(float(i + 1))
                faults.append(timed(lambda: launch(x)))
                if not concurrent:
                    continue
                host_write(float(i + 1))
                try:
                    moves.append(timed(prefetch))
                except Exception as exc:  # noqa: BLE001 - a CuPy or driver without it
                    concurrent = 0
                    why = f"cudaMemPrefetchAsync failed here: {type(exc).__name__}: {exc}"
                    launch(x)  # y must still hold this run's result for the check below
                    continue
                after.append(timed(lambda: launch(x)))
            stream.synchronize()
            self._check(result, "managed", y, cp.full(n, 2.0 * runs, dtype=cp.float32))
            for cid, seen in (
                ("managed-first-touch", faults),
                ("prefetch", moves),
                ("managed-prefetched", after),
            ):
                if seen:
                    result_rows.emit(ctx, result, self._row(cid, size, seen, n, pk))
            if not concurrent:
                result.unavailable["prefetch"] = why
                result.unavailable["managed-prefetched"] = why
        ctx.progress(1.0, "done")
        rates = {m.contender: m.throughput for m in result.measurements if m.throughput}
        result.summary = {"bytes": nbytes, "runs": runs, "gbs": rates}
        first = rates.get("managed-first-touch")
        if first and device.throughput:
            result.summary["device_over_first_touch"] = device.throughput / first
        result.explanation = explain(rates, nbytes)
        return self.finish(result)

    def _row(self, cid: str, size: str, timing: Any, n: int, pk: Any) -> Measurement:
        if isinstance(timing, list):  # the manual runs: median, min, max of the event times
            times = sorted(timing)
            med = times[len(times) // 2]
            return Measurement(
                contender=cid,
                size=size,
                dtype="fp32",
                time_median_s=med,
                time_min_s=times[0],
                time_max_s=times[-1],
                runs=len(times),
                throughput=(4.0 * n if cid == "prefetch" else 8.0 * n) / med / 1e9,
                unit="GB/s",
                note="the bytes moved to the GPU" if cid == "prefetch" else "read x, write y",
            )
        return row(
            cid,
            size,
            timing,
            work=8.0 * n,
            unit="GB/s",
            scale=1e9,
            dtype="fp32",
            peak=pk,
            peak_name="memory copy (read + written)" if pk else "",
            bytes_counted="8 * n (read x, write y)",
        )

    def _check(self, result: Result, what: str, y: Any, want: Any) -> None:
        bad = int((y != want).sum().get())
        result.verdicts.append(
            Verdict.check(
                what,
                float(bad),
                0.0,
                metric="elements differing from 2 * x",
                reference="2 * x (exact in float32)",
            )
        )

    def headline(self, result: Result) -> str:
        """One line: first-touch managed memory against plain device memory, and what a prefetch
        recovers."""
        gbs = result.summary.get("gbs") or {}
        first, dev, pre = (
            gbs.get(k) for k in ("managed-first-touch", "device", "managed-prefetched")
        )
        if not first or not dev:
            return ""
        text = (
            f"a kernel on managed memory the CPU had just written ran at {first:.3g} GB/s, "
            f"{times(dev / first)} slower than on plain device memory"
        )
        return text + (f"; after a prefetch, {pre:.3g} GB/s" if pre else "")


def explain(rates: dict[str, float], nbytes: int) -> str:
    """The managed-memory run's explanation: page faults on first touch, and what a prefetch
    changes."""
    text = (
        "Managed memory gives the CPU and the GPU one pointer: the driver moves each page to "
        "whichever side touches it. That convenience is paid at the first touch: the CPU wrote "
        "x last, so when the kernel reads it, every page (64 KiB to 2 MiB at a time) faults, the "
        "kernel's warps stall while the driver copies it over the bus, and the kernel runs at "
        "the speed of page migration instead of memory. cudaMemPrefetchAsync moves the whole "
        "buffer ahead of time, in large transfers, and the kernel then runs as on plain memory. "
    )
    first, dev, pre = (
        rates.get(k) for k in ("managed-first-touch", "device", "managed-prefetched")
    )
    if first and dev:
        text += (
            f"Here, on {fits.fmt_bytes(nbytes)}: {first:.0f} GB/s with page faults, "
            f"{dev:.0f} GB/s on plain device memory"
            + (f", {pre:.0f} GB/s after the prefetch" if pre else "")
            + ". "
        )
    text += (
        "Use managed memory to get a program working or to share data structures with "
        "pointers; prefetch (or use plain device memory) where speed matters, and never "
        "oversubscribe it on a GPU you share."
    )
    return text


EXPERIMENT = ManagedMemory()
