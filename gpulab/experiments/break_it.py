"""Break it on purpose: the failures every GPU programmer meets, each caught and explained.

Every mode fails in a real way (a real exception, a real dead process, a real endless loop) and
carries an explanation: what you just saw, why it happens, how to fix it. The runner's job is to
survive each one: the worker keeps serving, or is replaced, and the lab goes on.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import Any

from gpulab.core.devices import Inventory
from gpulab.core.params import Choice, Int, ParamSet
from gpulab.core.results import Result
from gpulab.experiments.base import Context, Experiment, ExperimentError

MODES = (
    "device-mismatch",
    "oom",
    "crash",
    "hang",
    "hang-ignoring-cancel",
    "runaway-kernel",
    "illegal-address",
)
SPIN_CAP_S = 60  # the runaway kernel stops itself after this, on the GPU's own clock
MIB = 2**20
BLOCK = 64 * MIB  # big enough that the C allocator maps and unmaps it (RSS really goes back)

EXPLAIN = {
    "device-mismatch": (
        "You just added a tensor that lives on {a} to one that lives on {b}, and PyTorch refused. "
        "An operation runs on one device, so all its inputs must already be there; PyTorch never "
        "copies behind your back, because a hidden copy across PCIe would cost far more than the "
        "add itself. Fix: create data where it will be used (torch.ones(n, device=x.device)) or "
        "move it once, on purpose, with .to(x.device); print t.device when in doubt."
    ),
    "oom-gpu": (
        "You asked for {ask} on a GPU with {free} free, and the allocation failed. GPU memory is "
        "a fixed amount with no swap behind it: when it is full, the next allocation fails. "
        "The tensors this job held were released when the error unwound it, and gpulab emptied "
        "the caching allocator, so the readings after the failure are back where they started. "
        "Fix: work in chunks or smaller batches, use a smaller dtype (fp16 halves the bytes), "
        "del what you no longer need, and check torch.cuda.mem_get_info() before a big step."
    ),
    "oom-cpu": (
        "There is no GPU here, so this run pretends the machine has {cap} (the cap_mib "
        "parameter) and allocates real host arrays against it. With {used} held, it asked for "
        "{ask} more and only {free} was left: the same refusal a GPU gives when its fixed "
        "memory is full, as a MemoryError with the size asked for and the size free. "
        "The arrays were released when the error unwound the job, so the host memory reading "
        "returns to its level before the job. Fix: chunks, smaller batches, smaller dtypes, "
        "and del what you no longer need."
    ),
    "crash": (
        "The worker process is about to die ({how}). Native code (a C, C++ or CUDA extension) "
        "can kill its whole process, and Python cannot catch that as an exception. That is why "
        "gpulab runs experiments in a separate worker: the lab survives, reports the exit "
        "signal and the last lines of the worker's stderr, and starts a new worker. Fix: read "
        "the stderr tail (faulthandler prints the Python stack of the crash), run the code "
        "alone with python -X faulthandler, and check that extension builds match (torch, "
        "CuPy and the CUDA driver)."
    ),
    "hang": (
        "This job now loops until you cancel it, checking for the cancel between steps. "
        "A loop that checks (ctx.check_cancelled() here, a flag or an event in your own code) "
        "stops within one step of being asked, and the worker stays warm for the next job."
    ),
    "hang-ignoring-cancel": (
        "This job now loops until you cancel it and never checks for the cancel, like code "
        "stuck inside a long native call. The cooperative cancel cannot reach it, so after a "
        "grace period gpulab kills the worker and starts a new one, losing its warm state. "
        "Fix: check for cancellation between steps, and keep each step short."
    ),
    "runaway-kernel": (
        "A kernel now spins on the GPU's own clock for {spin} s: one block per SM, each thread "
        "reading the nanosecond timer until the time is up. Watch the GPU pane: utilization "
        "reads 100% (NVML counts the time some kernel was running, so even this kernel, which "
        "computes nothing, fills it). The host thread waits in synchronize(), inside the CUDA "
        "driver, where no Python code runs: the cooperative cancel is never seen. So cancel, "
        "and after the grace period gpulab kills the worker; the driver tears its context "
        "down, which stops the kernel, and a spare worker takes over. The kernel also ends "
        "itself after {spin} s, so even a failed kill frees the GPU. Fix: keep each launch "
        "short (split long work into many launches and check for a cancel between them), and "
        "give device loops a bound: a kernel cannot be interrupted from the host."
    ),
    "illegal-address": (
        "A CuPy kernel wrote far past the end of its {n}-element array. The GPU has no bounds "
        "checks: a write to an address no allocation owns stops the kernel, and the error is "
        "sticky, so every later CUDA call in this process fails too. It surfaced at the next "
        "synchronize, not at the launch, because launches are asynchronous "
        "(CUDA_LAUNCH_BLOCKING=1 moves it to the launch). The only recovery is a new process: "
        "gpulab replaced the worker. Fix: guard every index (if (i < n)), and run the program "
        "under compute-sanitizer to find the exact line."
    ),
}

SCRIBBLE = r"""
extern "C" __global__ void scribble(float* out, long long n, long long stride) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        out[i * stride] = 1.0f;  // the bug: the stride carries writes far past the array
    }
}
"""


# Spins until the device's nanosecond clock (%globaltimer) passes the deadline; the bound is
# computed on the device, so the kernel frees the GPU by itself whatever the host does.
RUNAWAY = r"""
extern "C" __global__ void runaway(unsigned long long spin_ns, unsigned long long* spins) {
    unsigned long long start, now, n = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        ++n;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < spin_ns);
    if (threadIdx.x == 0) atomicAdd(spins, n);  // a side effect: the loop cannot be dropped
}
"""


class Broken(ExperimentError):
    """A failure this experiment caused on purpose, with its kind and its explanation."""

    def __init__(self, kind: str, message: str, explanation: str, **extra: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.extra = {"explanation": explanation, **extra}


class CappedMemoryError(MemoryError):
    """The CPU stand-in for a full GPU: an allocation larger than what is left under the cap."""

    kind = "out-of-memory"

    def __init__(self, message: str, requested: int, free: int, explanation: str) -> None:
        super().__init__(message)
        self.requested_bytes = requested
        self.free_bytes = free
        self.extra = {"requested_bytes": requested, "free_bytes": free, "explanation": explanation}


def size(n: int) -> str:
    """A byte count as MiB or GiB."""
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / MIB:.0f} MiB"


class BreakIt(Experiment):
    """The `break-it` experiment: Cause the classic failures on purpose (OOM, crash, hang, ...)
    and watch the lab survive."""

    id = "break-it"
    title = "Break it"
    summary = (
        "Cause the classic failures on purpose (OOM, crash, hang, ...) and watch the lab survive."
    )
    lesson = "debugging"
    params = ParamSet(
        (
            Choice("mode", "device-mismatch", MODES, "which failure to cause"),
            Int(
                "cap_mib",
                512,
                "oom without a GPU: the memory this run pretends the machine has",
                unit="MiB",
                min=128,
                max=2**20,
            ),
            Int(
                "spin_s",
                SPIN_CAP_S,
                "runaway-kernel: how long the kernel spins on the GPU clock",
                unit="s",
                min=1,
                max=SPIN_CAP_S,
            ),
            Choice(
                "crash_with",
                "segfault",
                ("segfault", "abort"),
                "crash: a segmentation fault (bad pointer) or abort()",
            ),
        )
    )

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        """Refuse a mode that needs CuPy on a machine without it."""
        mode = params["mode"]
        if mode in ("illegal-address", "runaway-kernel") and not inventory.available("cupy"):
            why = inventory.reason("cupy") or inventory.gpu_reason or "no GPU"
            raise ExperimentError(f"{mode} needs an NVIDIA GPU with CuPy, unavailable here: {why}")

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Cause the failure `params["mode"]` names; it never returns (an exception, a dead
        process or a cancel), and ExperimentError if the mode broke nothing."""
        mode = params["mode"]
        if mode == "device-mismatch":
            self._device_mismatch(ctx)
        elif mode == "oom":
            if ctx.has_cuda:
                self._oom_gpu(ctx)
            else:
                self._oom_cpu(ctx, int(params["cap_mib"]) * MIB)
        elif mode == "crash":
            self._crash(ctx, params["crash_with"])
        elif mode in ("hang", "hang-ignoring-cancel"):
            self._hang(ctx, check=mode == "hang")
        elif mode == "illegal-address":
            self._illegal_address(ctx)
        elif mode == "runaway-kernel":
            self._runaway(ctx, min(int(params["spin_s"]), SPIN_CAP_S))
        # Every mode above ends in an exception, a dead process or a cancel.
        raise ExperimentError(f"break-it mode {mode} did not break anything")

    def _device_mismatch(self, ctx: Context) -> None:
        import torch

        # Without a GPU, the 'meta' device (shapes, no data) stands in: the same device check.
        there = ctx.torch_device if ctx.has_cuda else "meta"
        ctx.progress(0.1, f"a tensor on {there}, another on the CPU, then a + b")
        a = torch.ones(1024, device=there)
        b = torch.ones(1024)
        try:
            a + b  # noqa: B018 - the failing operation is the lesson
        except RuntimeError as exc:
            text = str(exc).strip().splitlines()[0]
            raise Broken(
                "device-mismatch",
                f"RuntimeError: {text}",
                EXPLAIN["device-mismatch"].format(a=str(a.device), b=str(b.device)),
                devices=[str(a.device), str(b.device)],
            ) from exc

    def _oom_gpu(self, ctx: Context) -> None:
        import torch

        dev = ctx.torch_device
        free, _ = torch.cuda.mem_get_info(ctx.device_index)
        # Hold something first, so the readings show memory in use and then given back.
        held = torch.ones(min(free // 8, 2**30) // 4, device=dev)
        ctx.progress(0.3, f"holding {size(held.numel() * 4)} on {dev}")
        free, _ = torch.cuda.mem_get_info(ctx.device_index)
        ask = free + 2**30
        ctx.progress(0.6, f"asking for {size(ask)} with {size(free)} free")
        try:
            torch.empty(ask, dtype=torch.uint8, device=dev)
        except torch.cuda.OutOfMemoryError as exc:
            raise Broken(
                "out-of-memory",
                f"out of memory: asked for {size(ask)} with {size(free)} free on {dev}",
                EXPLAIN["oom-gpu"].format(ask=size(ask), free=size(free)),
                requested_bytes=ask,
                free_bytes=int(free),
                held_bytes=held.numel() * 4,
            ) from exc

    def _oom_cpu(self, ctx: Context, cap: int) -> None:
        import numpy as np

        held: list[Any] = []
        used = 0
        while used + 2 * BLOCK <= cap:
            held.append(np.ones(BLOCK, dtype=np.uint8))  # ones, not empty: the pages are touched
            used += BLOCK
            ctx.progress(used / cap, f"holding {size(used)} of the {size(cap)} cap")
        ask, free = 2 * BLOCK, cap - used
        raise CappedMemoryError(
            f"out of memory: asked for {size(ask)} with {size(free)} free of the {size(cap)} cap",
            ask,
            free,
            EXPLAIN["oom-cpu"].format(
                cap=size(cap), used=size(used), ask=size(ask), free=size(free)
            ),
        )

    def _crash(self, ctx: Context, how: str) -> None:
        what = "a segmentation fault, SIGSEGV" if how == "segfault" else "abort(), SIGABRT"
        ctx.log(EXPLAIN["crash"].format(how=what))
        ctx.progress(0.5, f"crashing the worker with {what}")
        sys.stdout.flush()
        sys.stderr.flush()
        if how == "abort":
            os.abort()
        ctypes.string_at(0)  # read address 0: the kernel sends SIGSEGV

    def _hang(self, ctx: Context, *, check: bool) -> None:
        ctx.log(EXPLAIN["hang" if check else "hang-ignoring-cancel"])
        if check:
            ctx.progress(0.0, "looping until cancelled")
        elif ctx.on_progress:  # ctx.progress() would check for the cancel: this mode must not
            ctx.on_progress(0.0, "looping until cancelled, deaf to cancels")
        start = time.perf_counter()
        said = 0
        while True:
            time.sleep(0.01)  # one "step" of pretend work
            if not check:
                continue
            elapsed = time.perf_counter() - start
            if elapsed >= said + 1:
                said += 1
                ctx.progress(0.0, f"still looping after {said} s; cancel to stop")
            ctx.check_cancelled()

    def _runaway(self, ctx: Context, spin_s: int) -> None:
        import cupy

        ctx.log(EXPLAIN["runaway-kernel"].format(spin=spin_s))
        dev = cupy.cuda.Device(ctx.device_index)
        with dev:
            sms = int(dev.attributes["MultiProcessorCount"])
            spins = cupy.zeros(1, dtype=cupy.uint64)
            kernel = cupy.RawKernel(RUNAWAY, "runaway")
            _ = kernel.num_regs  # compiles now: the progress line below means "the GPU is busy"
            kernel((sms,), (128,), (cupy.uint64(spin_s * 10**9), spins))
            if ctx.on_progress:  # ctx.progress() would check for the cancel: this mode must not
                ctx.on_progress(
                    0.0,
                    f"a kernel spins on {sms} SMs for {spin_s} s; cancel, and watch the worker "
                    "get killed",
                )
            dev.synchronize()  # deaf to cancels: the thread is inside the driver
        raise Broken(
            "experiment-error",
            f"the runaway kernel ended by itself after {spin_s} s (no cancel came, or the kill "
            "failed)",
            EXPLAIN["runaway-kernel"].format(spin=spin_s),
            spins=int(spins.get()[0]),
            sms=sms,
        )

    def _illegal_address(self, ctx: Context) -> None:
        import cupy

        n = 1024
        out = cupy.zeros(n, dtype=cupy.float32)
        kernel = cupy.RawKernel(SCRIBBLE, "scribble")
        ctx.progress(0.3, "launching a kernel that writes far out of bounds")
        stride = 1 << 28  # element i lands i GiB past the start: unmapped memory
        kernel((n // 256,), (256,), (out, cupy.int64(n), cupy.int64(stride)))
        try:
            cupy.cuda.Device(ctx.device_index).synchronize()
        except Exception as exc:  # any class CuPy gives the illegal address: raised as Broken
            text = str(exc).strip().splitlines()[0]
            raise Broken(
                "illegal-address",
                f"illegal memory access on the GPU: {text}",
                EXPLAIN["illegal-address"].format(n=n),
            ) from exc
        raise ExperimentError("the out-of-bounds kernel finished without an error (unexpected)")


EXPERIMENT = BreakIt()
