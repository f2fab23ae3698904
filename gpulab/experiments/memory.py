"""Memory: what NVML sees vs what PyTorch counts, the caching allocator, peaks, and an OOM.

Steps, each a row: the CUDA context (NVML's figure for this process vs memory_allocated), a
tensor allocated, `del` without empty_cache (reserved stays), empty_cache (reserved and NVML
drop), peak tracking across temporaries, an allocation of `gib` held for `hold_s` seconds (the
gauge shows it), and an out-of-memory error caught and recovered from. On the CPU: the process's
resident memory around a NumPy allocation (untouched pages cost nothing until written).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import time
from typing import Any

from gpulab.core.params import Float, ParamSet
from gpulab.core.results import Measurement, Result, Verdict
from gpulab.experiments import fits, result_rows
from gpulab.experiments.base import Contender, Context, DoesNotFit, Experiment

MiB = 2**20
GiB = 2**30
# The host block is written (and handed back) this much at a time, with a cancel check
# between: first writes fault pages in at a few GB/s, so a block takes well under 100 ms.
FILL_BLOCK = 16 * 2**20


def nvml_process_bytes(device_index: int) -> tuple[int | None, int | None, str]:
    """(this process's GPU memory, the device's used memory, reason when unknown) via NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no NVML: the reason replaces NVML's figures
        return None, None, f"NVML unavailable: {exc}"
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        used = int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
        mine, reason = None, ""
        try:
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            for proc in procs:
                if proc.pid == os.getpid() and proc.usedGpuMemory is not None:
                    mine = int(proc.usedGpuMemory)
            if mine is None:
                reason = (
                    "NVML lists no memory for this process (a container or VM can hide "
                    "process ids); the device's used memory is shown instead"
                )
        except Exception as exc:  # noqa: BLE001 - any NVML error listing processes: the reason says so
            reason = f"NVML could not list processes: {exc}"
        return mine, used, reason
    except Exception as exc:  # noqa: BLE001 - any NVML error: the reason replaces NVML's figures
        return None, None, f"NVML could not read the device: {exc}"
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def rss_bytes() -> int | None:
    """This process's resident memory, from /proc (Linux) or getrusage's peak elsewhere."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        try:
            import resource  # deferred: Unix only, and only where /proc is not

            return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
        except Exception:  # noqa: BLE001 - no figure is an answer; the caller shows none
            return None


def _row(step: str, seconds: float, note: str, **extra: Any) -> Measurement:
    return Measurement(
        contender=step,
        size="",
        time_median_s=seconds,
        time_min_s=seconds,
        time_max_s=seconds,
        runs=1,
        note=note,
        extra={k: v for k, v in extra.items() if v is not None},
    )


class Memory(Experiment):
    """The `memory` experiment: memory_allocated vs reserved vs NVML; del, empty_cache, peaks; a
    held allocation."""

    id = "memory"
    title = "GPU memory: allocator, context, peaks and OOM"
    summary = "memory_allocated vs reserved vs NVML; del, empty_cache, peaks; a held allocation."
    lesson = "memory-management"
    params = ParamSet(
        (
            Float("gib", 4.0, "size of the allocation to hold", unit="GiB", min=0.001, max=1024),
            Float("hold_s", 3.0, "seconds to hold it", unit="s", min=0.0, max=600),
        )
    )
    contenders = (
        Contender("torch", "PyTorch's CUDA caching allocator", "torch-cuda"),
        Contender("numpy", "NumPy and the process's resident memory (CPU)", "numpy"),
    )
    bench_params = ({"gib": 4.0, "hold_s": 1.0},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        result = self.new_result(ctx, params)
        if ctx.has_cuda:
            result.unavailable["numpy"] = "the GPU allocator is shown instead"
            self._gpu(ctx, result, float(params["gib"]), float(params["hold_s"]))
        else:
            self._cpu(ctx, result, float(params["gib"]), float(params["hold_s"]))
        return self.finish(result)

    # ------------------------------------------------------------------ GPU

    def _gpu(self, ctx: Context, result: Result, gib: float, hold_s: float) -> None:
        import torch

        dev = torch.device(ctx.torch_device)
        free, total = torch.cuda.mem_get_info(dev)
        want = int(gib * GiB)
        if want > free:
            raise DoesNotFit(
                f"gib={gib:g} needs {want / GiB:.2f} GiB but only {free / GiB:.2f} GiB of the "
                f"{total / GiB:.1f} GiB CUDA can use is free (the card's total less the "
                "driver's reserve): choose a smaller size"
            )

        def reading(step: str, t0: float, note: str) -> dict[str, Any]:
            torch.cuda.synchronize(dev)
            mine, used, why = nvml_process_bytes(ctx.device_index)
            r: dict[str, Any] = {
                "allocated": int(torch.cuda.memory_allocated(dev)),
                "reserved": int(torch.cuda.memory_reserved(dev)),
                "peak": int(torch.cuda.max_memory_allocated(dev)),
                "nvml_process": mine,
                "nvml_device_used": used,
            }
            pool = ctx.memory().get("cupy_total")
            if pool:
                r["cupy_pool"] = int(pool)
            if why:
                r["nvml_reason"] = why
            result_rows.emit(ctx, result, _row(step, time.perf_counter() - t0, note, **r))
            return r

        ctx.progress(0.02, "the CUDA context")
        t0 = time.perf_counter()
        torch.zeros(1, device=dev)  # makes sure the context exists
        ctx_r = reading(
            "context", t0, "a 4-byte tensor: NVML counts the whole CUDA context, torch does not"
        )
        ctx.progress(0.1, "allocate 1 GiB")
        t0 = time.perf_counter()
        size = min(GiB, want)
        x = torch.empty(size // 4, device=dev)
        x.fill_(1.0)
        a1 = reading(
            "allocate", t0, f"x = torch.empty({size // 4:,}) ({result_rows.size_label(size)})"
        )
        ctx.progress(0.2, "del x")
        t0 = time.perf_counter()
        del x
        d1 = reading("del", t0, "del x: allocated drops, reserved (the cache) stays")
        ctx.progress(0.3, "empty_cache")
        t0 = time.perf_counter()
        torch.cuda.empty_cache()
        e1 = reading("empty_cache", t0, "torch.cuda.empty_cache(): reserved returns to the driver")
        ctx.progress(0.4, "peak tracking")
        torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        n = max(1, size // 4 // 4)
        a = torch.rand(n, device=dev)
        b = (a * 2 + 1).sum()  # two n-element temporaries live at once, then freed
        del a, b
        p1 = reading("peak", t0, "(a * 2 + 1).sum(): the peak includes temporaries now freed")

        ctx.progress(0.5, f"allocating {gib:g} GiB")
        t0 = time.perf_counter()
        big = torch.empty(want // 4, device=dev)
        big.fill_(1.0)
        h1 = reading("hold", t0, f"{gib:g} GiB allocated and written")
        start = time.perf_counter()
        while time.perf_counter() - start < hold_s:
            left = hold_s - (time.perf_counter() - start)
            ctx.progress(
                0.5 + 0.3 * (1 - left / max(hold_s, 1e-9)),
                f"holding {gib:g} GiB: {left:.1f} s left",
            )
            ctx.sleep(min(0.2, max(left, 0.0)))  # a cancel ends the wait at once
        del big
        torch.cuda.empty_cache()

        ctx.progress(0.85, "out of memory on purpose")
        free_now, _ = torch.cuda.mem_get_info(dev)
        before = int(torch.cuda.memory_allocated(dev))
        ask = free_now + 4 * GiB
        t0 = time.perf_counter()
        message = ""
        try:
            torch.empty(ask // 4, device=dev)
        except torch.OutOfMemoryError as exc:
            message = (str(exc).strip().splitlines() or ["out of memory"])[0]
        torch.cuda.empty_cache()
        oom = reading("oom", t0, f"asked for {ask / GiB:.1f} GiB: {message[:160] or 'no error?'}")
        after = oom["allocated"]
        result.verdicts.append(
            Verdict.check(
                "oom raised",
                0.0 if message else 1.0,
                0.0,
                metric="1 if no OutOfMemoryError",
                reference="ask > free",
            )
        )
        result.verdicts.append(
            Verdict.check(
                "recovered",
                float(abs(after - before)),
                0.0,
                metric="bytes allocated after the OOM minus before",
                reference="memory back at the earlier level",
            )
        )
        result.verdicts.append(
            Verdict.check(
                "del keeps the cache",
                float(max(0, a1["reserved"] - d1["reserved"])),
                0.0,
                metric="bytes reserved released by del alone",
                reference="caching allocator keeps freed blocks",
            )
        )
        ctx.progress(1.0, "done")
        context_bytes = None
        if ctx_r["nvml_process"] is not None:
            # What this process holds beyond PyTorch's cache and CuPy's pool (when loaded).
            context_bytes = ctx_r["nvml_process"] - ctx_r["reserved"] - ctx_r.get("cupy_pool", 0)
        result.summary = {
            "context_bytes_nvml": context_bytes,
            "nvml_reason": ctx_r.get("nvml_reason", ""),
            "allocated_after_context": ctx_r["allocated"],
            "reserved_after_del": d1["reserved"],
            "reserved_after_empty_cache": e1["reserved"],
            "peak_bytes": p1["peak"],
            "held_bytes": h1["allocated"],
            "oom_message": message,
            "allocated_before_oom": before,
            "allocated_after_oom": after,
        }
        ctxline = (
            f"Here NVML counted {context_bytes / MiB:.0f} MiB for this process beyond what "
            "PyTorch reserved (and CuPy's pool held): the CUDA context (kernel images, runtime "
            "state) and library workspaces such as cuBLAS's."
            if context_bytes is not None
            else f"NVML could not attribute memory to this process here ({ctx_r.get('nvml_reason')})."
        )
        result.explanation = (
            "torch.cuda.memory_allocated counts only live tensors. memory_reserved adds what "
            "PyTorch's caching allocator keeps for reuse: after `del` the tensor's memory goes "
            "back to the cache, not to the driver, so other processes (and nvidia-smi) still see "
            "it used; empty_cache returns it. Neither counts the CUDA context, which NVML and "
            "nvidia-smi do: the seed's '0.0 MB of kernel overhead' was reading the wrong "
            f"counter. {ctxline} max_memory_allocated keeps the peak, including temporaries "
            "already freed: the number to watch when a step runs out of memory. An OOM is an "
            "ordinary exception: catch it, drop references, empty the cache, and the process "
            "carries on with its memory back where it was (unlike an illegal address, which "
            "poisons the whole context)."
        )

    # ------------------------------------------------------------------ CPU

    def _cpu(self, ctx: Context, result: Result, gib: float, hold_s: float) -> None:
        import numpy as np

        result.unavailable["torch"] = (
            "allocated/reserved, empty_cache and NVML exist only for a GPU: "
            + (ctx.inventory.gpu_reason or "no GPU")
        )
        avail = fits.host_available_bytes()  # the one host-RAM reader every experiment uses
        want = int(gib * GiB)
        if avail is not None and want > avail // 2:
            raise DoesNotFit(
                f"gib={gib:g} is more than half of the {avail / GiB:.1f} GiB of free RAM: "
                "choose a smaller size"
            )
        ctx.progress(0.05, "baseline")
        r0 = rss_bytes()
        result_rows.emit(ctx, result, _row("baseline", 0.0, "resident memory before", rss=r0))
        t0 = time.perf_counter()
        # Straight from the OS (an anonymous mapping), not from malloc: after earlier runs
        # freed big blocks, malloc may hand back pages that are already resident, and the
        # lesson (untouched pages cost nothing until written) would not show.
        buf = mmap.mmap(-1, want)
        x = np.frombuffer(buf, dtype=np.uint8)
        r1 = rss_bytes()
        result_rows.emit(
            ctx,
            result,
            _row(
                "mmap",
                time.perf_counter() - t0,
                "mapped, never written: the OS has not given pages yet",
                rss=r1,
            ),
        )
        ctx.progress(0.2, "writing every page")
        t0 = time.perf_counter()
        for s in ctx.blocks(want, FILL_BLOCK):  # a cancel is taken between blocks
            x[s].fill(1)
        r2 = rss_bytes()
        result_rows.emit(
            ctx,
            result,
            _row("fill", time.perf_counter() - t0, "every page written: now resident", rss=r2),
        )
        start = time.perf_counter()
        while time.perf_counter() - start < hold_s:
            left = hold_s - (time.perf_counter() - start)
            ctx.progress(
                0.3 + 0.5 * (1 - left / max(hold_s, 1e-9)),
                f"holding {gib:g} GiB: {left:.1f} s left",
            )
            ctx.sleep(min(0.2, max(left, 0.0)))  # a cancel ends the wait at once
        t0 = time.perf_counter()
        del x
        # Handed back a block at a time (a cancel is taken between blocks), then unmapped.
        if hasattr(mmap, "MADV_DONTNEED"):
            for s in ctx.blocks(want, FILL_BLOCK):
                buf.madvise(mmap.MADV_DONTNEED, s.start, s.stop - s.start)
        buf.close()  # unmapped: the pages go back to the OS at once
        r3 = rss_bytes()
        result_rows.emit(
            ctx,
            result,
            _row(
                "del",
                time.perf_counter() - t0,
                "unmapped: the pages go straight back to the OS",
                rss=r3,
            ),
        )
        ctx.progress(1.0, "done")
        grew = (r2 - r0) if (r0 is not None and r2 is not None) else None
        if grew is not None:
            result.verdicts.append(
                Verdict.check(
                    "fill made it resident",
                    abs(grew - want) / want,
                    0.25,
                    metric="|RSS growth - size| / size",
                    reference="the array's size",
                )
            )
        result.summary = {
            "bytes": want,
            "rss_baseline": r0,
            "rss_after_empty": r1,
            "rss_after_fill": r2,
            "rss_after_del": r3,
        }
        result.explanation = (
            "On the CPU there is one layer: the operating system. A new mapping (what malloc "
            "and np.empty use for large blocks) reserves address space, and pages become "
            "resident only when first written, which is why resident memory barely moves until "
            "the fill. Unmapping returns them to the OS at once. (Smaller blocks can come from "
            "memory malloc already holds, pages that are resident already: this experiment maps "
            "its block directly so the effect always shows.) On a GPU there are more layers, which this experiment shows when one is "
            "present: PyTorch's caching allocator (allocated vs reserved, empty_cache), the "
            "CUDA context that only NVML sees, peak tracking, and out-of-memory recovery."
        )

    def headline(self, result: Result) -> str:
        """One line: what the CUDA context held beyond PyTorch's cache and what stayed reserved
        after del (or host RSS growth)."""
        s = result.summary
        if s.get("context_bytes_nvml") is not None:
            return (
                f"the CUDA context held {s['context_bytes_nvml'] / 2**20:.0f} MiB beyond PyTorch's "
                f"cache; after del, {s.get('reserved_after_del', 0) / 2**20:.0f} MiB stayed reserved"
            )
        if "reserved_after_del" in s:
            # NVML cannot attribute memory to a process in some containers: what torch saw stands
            why = s.get("nvml_reason") or "NVML gave no per-process figure"
            return (
                f"after del, {s['reserved_after_del'] / 2**20:.0f} MiB stayed reserved in "
                f"PyTorch's cache; the CUDA context's own share is not shown ({why})"
            )
        if "rss_after_fill" in s:
            mib = 2**20
            empty = (s["rss_after_empty"] - s["rss_baseline"]) / mib
            fill = (s["rss_after_fill"] - s["rss_baseline"]) / mib
            return (
                f"resident memory grew {empty:.0f} MiB when {s['bytes'] / mib:.0f} MiB were "
                f"allocated and {fill:.0f} MiB once they were written"
            )
        return ""


EXPERIMENT = Memory()
