"""Bandwidth: host<->device copies (pageable and pinned) and device-to-device, by size.

Buffers are allocated once at the largest size, filled with random bytes, and sliced for the
smaller sizes, so allocation and pinning are never timed. Small copies are repeated several
times between one pair of CUDA events (they are shorter than the events' resolution).
A plain runtime memcpy (cudaMemcpyAsync through CuPy's runtime binding, on the same pinned
buffers and stream) is the peer PyTorch's pinned copies are measured against.
Bytes counted: host<->device copies count the bytes moved once; device-to-device and host
memory copies count bytes read + bytes written (the way the calibration counts them).
"% of peak" is against this device's measured ceilings (core/peaks.py): the calibration's pinned
H2D and D2H copies for the PCIe rows, its device-to-device copy for d2d, the host copy for the
NumPy row. The PCIe link's theoretical figure is context, in the summary and the explanation.
A host copy whose source and destination fit in the CPU's last-level cache runs from the cache,
faster than DRAM: those rows are labelled cache-resident and get no % of the (DRAM) copy ceiling.
The link and the cache are read in bandwidth_machine.py; the summary and the explanation are
written in bandwidth_report.py.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamError, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import backends, ceilings, fits, result_rows
from gpulab.experiments.bandwidth_machine import (
    cache_resident_note,
    host_cache_bytes,
    pcie_gbs,
    pcie_link,
)
from gpulab.experiments.bandwidth_report import curve_series, explain, summary
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import times

VERIFY_BYTES = 16 * 2**20


def host_bytes(hi: int, gpu: bool) -> int:
    """Host memory: NumPy's source and destination, and with a GPU a pageable destination and
    pinned source and destination (pinned memory cannot be swapped out): 2 or 5 x max_size."""
    return int((5 if gpu else 2) * hi * 1.05) + fits.HOST_SLACK_BYTES


def sizes_between(lo: int, hi: int) -> list[int]:
    """Sizes from `lo` growing fourfold up to `hi`, with `hi` always the last."""
    out = []
    s = lo
    while s <= hi:
        out.append(s)
        s *= 4
    if out[-1] != hi:
        out.append(hi)
    return out


class Bandwidth(Experiment):
    """The `bandwidth` experiment: H2D and D2H (pageable vs pinned), device-to-device, by size,
    vs a runtime memcpy."""

    id = "bandwidth"
    title = "Memory bandwidth: host, PCIe and device"
    summary = "H2D and D2H (pageable vs pinned), device-to-device, by size, vs a runtime memcpy."
    lesson = "transfers"
    params = ParamSet(
        (
            Int("min_size", 64 * 2**10, "smallest copy", unit="bytes", min=4096, max=2**34),
            Int(
                "max_size",
                2**30,
                "largest copy (sizes go up x4)",
                unit="bytes",
                min=4096,
                max=2**34,
            ),
        )
    )
    contenders = (
        Contender("h2d-pageable", "host->device, pageable (t.to / copy_)", "torch-cuda"),
        Contender("h2d-pinned", "host->device, pinned, non_blocking", "torch-cuda"),
        Contender("h2d-runtime", "host->device, cudaMemcpyAsync on pinned (CuPy runtime)", "cupy"),
        Contender("d2h-pageable", "device->host, pageable", "torch-cuda"),
        Contender("d2h-pinned", "device->host, pinned, non_blocking", "torch-cuda"),
        Contender("d2h-runtime", "device->host, cudaMemcpyAsync on pinned (CuPy runtime)", "cupy"),
        Contender("d2d", "device->device copy (read + written)", "torch-cuda"),
        Contender("host-memcpy", "host memory copy, NumPy (read + written)", "numpy"),
    )
    bench_params = ({"min_size": 64 * 2**10, "max_size": 2**30},)
    bench_suites = ("full",)

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        """Refuse a min_size above max_size."""
        if params["min_size"] > params["max_size"]:
            raise ParamError(
                "min_size", params["min_size"], f"at most max_size ({params['max_size']})"
            )

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        lo, hi = int(params["min_size"]), int(params["max_size"])
        lo -= lo % 4
        hi -= hi % 4
        sizes = sizes_between(lo, hi)
        result = self.new_result(ctx, params)
        todo = result_rows.todo(self, result)
        gpu_todo = [c for c in todo if c.backend != "numpy"]
        what = f"bandwidth up to {result_rows.size_label(hi)}"
        fits.require_host_fit(host_bytes(hi, bool(gpu_todo)), what)
        if gpu_todo:
            fits.require_fit(ctx, 2 * hi * 1.05 + fits.SLACK_BYTES, what)
        p = ceilings.peaks(ctx)
        link = pcie_link(ctx.inventory, ctx.device_index) if gpu_todo else {}
        pcie = None
        if "max_gen" in link and "max_width" in link:
            pcie = pcie_gbs(link["max_gen"], link["max_width"])
        bufs = self._buffers(ctx, hi, bool(gpu_todo))
        curves: dict[str, list[tuple[float, float]]] = {}
        steps = len(todo) * len(sizes)
        llc = host_cache_bytes()
        done = 0
        for c in todo:
            self._verify(ctx, result, c.id, bufs, min(hi, VERIFY_BYTES))
            for size in sizes:
                ctx.progress(done / steps, f"{c.label}: {result_rows.size_label(size)}")
                done += 1
                fn = self._copy(c.id, bufs, size)
                inner = max(1, min(64, (8 * 2**20) // size))
                timing = ctx.timer.measure(
                    fn,
                    sync=backends.sync_kind("torch-cuda" if c.backend != "numpy" else "numpy"),
                    inner=inner,
                    budget_s=min(ctx.timer.budget_s, 0.5),
                    repeats=min(ctx.timer.repeats, 10),
                )
                both_ways = c.id in ("d2d", "host-memcpy")
                work = (2 if both_ways else 1) * size
                cached = ""
                if c.id == "d2d":
                    pk, pk_name = (
                        ceilings.peak_here(p, "torch-cuda", "copy"),
                        "device copy (calibrated)",
                    )
                elif c.id == "host-memcpy":
                    cached = cache_resident_note(2 * size, llc)
                    pk = None if cached else ceilings.peak_here(p, "numpy", "copy")
                    pk_name = "host memory copy (calibrated)"
                else:
                    # This device's measured pinned copy in the same direction, not the link's
                    # datasheet figure (which no copy reaches: see the summary).
                    d = c.id[:3]
                    pk = ceilings.peak_here(p, "torch-cuda", d)
                    pk_name = f"pinned {d.upper()} copy (calibrated)"
                cache_extra: dict[str, Any] = (
                    {"note": cached, "cache_resident": True} if cached else {}
                )
                m = result_rows.emit(
                    ctx,
                    result,
                    row(
                        c.id,
                        result_rows.size_label(size),
                        timing,
                        work=work,
                        unit="GB/s",
                        scale=1e9,
                        peak=pk,
                        peak_name=pk_name if pk else "",
                        bytes=size,
                        bytes_counted="read + written" if both_ways else "moved once",
                        inner=inner,
                        **cache_extra,
                    ),
                )
                curves.setdefault(c.id, []).append((float(size), m.throughput or 0.0))
        ctx.progress(1.0, "done")
        result.summary = summary(curves, link, pcie, p)
        result.series.extend(curve_series(curves, result.summary))
        result.explanation = explain(result.summary, bool(gpu_todo))
        del bufs
        return self.finish(result)

    def _buffers(self, ctx: Context, hi: int, gpu: bool) -> dict[str, Any]:
        import numpy as np

        rng = np.random.default_rng()
        host = rng.integers(0, 256, size=hi, dtype=np.uint8)
        bufs: dict[str, Any] = {"host_np": host, "host_np_dst": np.empty_like(host)}
        bufs["host_np_dst"].fill(0)  # touch every page so first-touch faults are not timed
        if not gpu:
            return bufs
        import torch

        dev = torch.device(ctx.torch_device)
        bufs["host"] = torch.from_numpy(host)
        bufs["host_dst"] = torch.zeros_like(bufs["host"])
        bufs["pinned"] = torch.empty(hi, dtype=torch.uint8, pin_memory=True)
        bufs["pinned"].copy_(bufs["host"])
        bufs["pinned_dst"] = torch.empty(hi, dtype=torch.uint8, pin_memory=True)
        bufs["pinned_dst"].zero_()  # pinned from the start: no pageable staging copy
        bufs["dev"] = bufs["host"].to(dev)
        bufs["dev_dst"] = torch.empty_like(bufs["dev"])
        bufs["stream"] = torch.cuda.current_stream(dev).cuda_stream
        torch.cuda.synchronize(dev)
        return bufs

    def _copy(self, cid: str, b: dict[str, Any], size: int) -> Any:
        import numpy as np

        if cid == "host-memcpy":
            src, dst = b["host_np"][:size], b["host_np_dst"][:size]
            return lambda: np.copyto(dst, src)
        if cid.endswith("-runtime"):
            import cupy as cp

            rt = cp.cuda.runtime
            if cid == "h2d-runtime":
                dst, src, kind = b["dev_dst"].data_ptr(), b["pinned"].data_ptr(), 1
            else:
                dst, src, kind = b["pinned_dst"].data_ptr(), b["dev"].data_ptr(), 2
            stream = b["stream"]
            return lambda: rt.memcpyAsync(dst, src, size, kind, stream)
        pairs = {
            "h2d-pageable": ("dev_dst", "host", False),
            "h2d-pinned": ("dev_dst", "pinned", True),
            "d2h-pageable": ("host_dst", "dev", False),
            "d2h-pinned": ("pinned_dst", "dev", True),
            "d2d": ("dev_dst", "dev", False),
        }
        d, s, nb = pairs[cid]
        dst, src = b[d][:size], b[s][:size]
        return lambda: dst.copy_(src, non_blocking=nb)

    def _verify(self, ctx: Context, result: Result, cid: str, b: dict[str, Any], size: int) -> None:
        """One copy into a poisoned destination, compared byte for byte with its source."""
        import numpy as np

        if cid == "host-memcpy":
            b["host_np_dst"][:size] = 0
            self._copy(cid, b, size)()
            bad = int(np.count_nonzero(b["host_np_dst"][:size] != b["host_np"][:size]))
        else:
            import torch

            dst_key = {"h2d": "dev_dst", "d2d": "dev_dst"}.get(cid[:3])
            if dst_key is None:
                dst_key = "host_dst" if cid == "d2h-pageable" else "pinned_dst"
            src_key = (
                "dev"
                if cid.startswith(("d2h", "d2d"))
                else ("host" if cid == "h2d-pageable" else "pinned")
            )
            b[dst_key][:size].fill_(0)
            torch.cuda.synchronize()
            self._copy(cid, b, size)()
            torch.cuda.synchronize()
            got = b[dst_key][:size].cpu()
            bad = int((got != b[src_key][:size].cpu()).sum().item())
        result.verdicts.append(
            Verdict.check(
                cid,
                float(bad),
                0.0,
                metric="bytes differing from the source",
                reference="the source buffer",
                size=result_rows.size_label(size),
            )
        )

    def headline(self, result: Result) -> str:
        """One line: the largest pinned host-to-GPU rate against the pageable one (or the CPU's
        copy rate)."""
        largest = result.summary.get("largest_size_gbs") or {}
        pin, page = largest.get("h2d-pinned"), largest.get("h2d-pageable")
        if pin:
            text = f"pinned host->GPU copies reached {pin:.3g} GB/s"
            if page:
                text += f", {times(pin / page)} pageable ({page:.3g} GB/s)"
            if largest.get("d2d"):
                text += f"; on the GPU itself {largest['d2d']:.3g} GB/s"
            return text
        host = largest.get("host-memcpy")
        if host:
            return (
                f"this CPU's memory copied {host:.3g} GB/s at the largest size (no GPU rows here)"
            )
        return ""


EXPERIMENT = Bandwidth()
