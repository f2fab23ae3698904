"""Streams: copying chunk i+1 to the GPU while chunk i computes, against doing them in turn.

Each chunk (pinned host memory) is copied to the GPU and fed to a compute sized to take about
`ratio` times the copy on this GPU (tanh(x @ W), W's width chosen from a measured copy and a
measured matmul). Four ways, timed with the experiment's Timer (CUDA events):

- serial: one stream, copy then compute, chunk after chunk (non_blocking frees the host only);
- overlapped: a side stream copies chunk i+1 while the current stream computes chunk i
  (wait_stream before each compute, record_stream on each prefetched buffer);
- copies alone and computes alone, for the ideal: perfect overlap takes the longer of the two
  plus the shorter of one copy and one compute (the pipeline's fill).

Then one more run of each pipeline with a CUDA event before and after every copy and every
compute, on the stream that runs it: the per-stream busy intervals, drawn as a timeline. Every
pipeline's outputs are checked against the serial one's.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.devices import Inventory
from gpulab.core.params import Float, Int, ParamSet
from gpulab.core.results import Artifact, Result, Verdict
from gpulab.experiments import ceilings, fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.result_rows import row

D = 1024  # columns of a chunk (float32)
WIDTH = 64  # timeline columns


def columns_for(copy_s: float, matmul_s: float, ratio: float) -> int:
    """W's width m for which tanh(x @ W) takes about `ratio` x the copy, from the time of one
    matmul at m = D (its time grows about linearly in m); a multiple of 32, 32 to 16384."""
    m = ratio * copy_s / matmul_s * D
    return int(min(16384, max(32, round(m / 32) * 32)))


def ideal_s(copies_s: float, computes_s: float, chunks: int) -> float:
    """Perfect overlap: the busier engine's total plus the other's share of one chunk (the first
    copy before any compute, or the last compute after every copy)."""
    return max(copies_s, computes_s) + min(copies_s, computes_s) / chunks


def timeline(lanes: dict[str, list[tuple[float, float]]], end: float, width: int = WIDTH) -> str:
    """Busy intervals (seconds from the start) as one text row per lane: '#' busy, '.' idle."""
    lines = []
    for name, spans in lanes.items():
        cells = ["."] * width
        for a, b in spans:
            lo = int(a / end * width) if end > 0 else 0
            hi = max(lo + 1, int(round(b / end * width))) if end > 0 else 0
            for i in range(lo, min(hi, width)):
                cells[i] = "#"
        lines.append(f"{name:<20s}|{''.join(cells)}|")
    lines.append(f"{'':<20s} 0{'':{width - 10}s}{end * 1e3:8.2f} ms")
    return "\n".join(lines)


def _busy(lane: list[tuple[Any, Any]], origin: Any) -> list[tuple[float, float]]:
    return [(origin.elapsed_time(a) / 1e3, origin.elapsed_time(b) / 1e3) for a, b in lane]


def _pipelines(torch: Any, dev: str, w: Any) -> tuple[Any, Any]:
    def step(x: Any) -> Any:
        return torch.tanh(x @ w)

    def serial(chunks: list, lanes: dict | None = None) -> list:
        main = torch.cuda.current_stream()
        outs = []
        for c in chunks:
            with _span(torch, main, lanes, "one stream: copy"):
                x = c.to(dev, non_blocking=True)
            with _span(torch, main, lanes, "one stream: compute"):
                outs.append(step(x))
        return outs

    def overlapped(chunks: list, lanes: dict | None = None) -> list:
        main, side = torch.cuda.current_stream(), torch.cuda.Stream()
        side.wait_stream(main)

        def prefetch(c: Any) -> Any:
            with torch.cuda.stream(side), _span(torch, side, lanes, "side stream: copy"):
                return c.to(dev, non_blocking=True)

        outs, nxt = [], prefetch(chunks[0])
        for i in range(len(chunks)):
            main.wait_stream(side)
            cur = nxt
            cur.record_stream(main)
            if i + 1 < len(chunks):
                nxt = prefetch(chunks[i + 1])
            with _span(torch, main, lanes, "main stream: compute"):
                outs.append(step(cur))
        return outs

    return serial, overlapped


class _span:
    """A CUDA event pair around the work queued inside, on `stream`, kept in lanes[name]."""

    def __init__(self, torch: Any, stream: Any, lanes: dict | None, name: str) -> None:
        self.torch, self.stream, self.lanes, self.name = torch, stream, lanes, name

    def __enter__(self) -> None:
        if self.lanes is not None:
            self.start = self.torch.cuda.Event(enable_timing=True)
            self.start.record(self.stream)

    def __exit__(self, *exc: object) -> None:
        if self.lanes is not None:
            end = self.torch.cuda.Event(enable_timing=True)
            end.record(self.stream)
            self.lanes.setdefault(self.name, []).append((self.start, end))


class StreamsOverlap(Experiment):
    id = "streams-overlap"
    title = "Streams: overlap copies with compute"
    summary = "Copy chunk i+1 on a side stream while chunk i computes, vs copy-then-compute."
    lesson = "streams"
    params = ParamSet(
        (
            Int("chunk_mib", 16, "MiB per chunk (pinned host memory)", unit="MiB", min=1, max=1024),
            Int("chunks", 8, "chunks in the pipeline", min=2, max=256),
            Float("ratio", 1.0, "compute time / copy time per chunk", min=0.05, max=20.0),
        )
    )
    contenders = (
        Contender("serial", "one stream: copy, compute, copy, ...", "torch-cuda"),
        Contender("overlapped", "side stream copies chunk i+1 during compute i", "torch-cuda"),
        Contender("copies", "the copies alone", "torch-cuda"),
        Contender("computes", "the computes alone", "torch-cuda"),
    )
    bench_params = ({"chunk_mib": 16, "chunks": 8, "ratio": 1.0},)
    bench_suites = ("full",)

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        if not inventory.available("torch-cuda"):
            why = inventory.reason("torch-cuda") or inventory.gpu_reason or "no GPU"
            raise ExperimentError(
                f"streams-overlap overlaps PCIe copies with kernels and needs a GPU: {why}"
            )

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        mib, n, ratio = int(params["chunk_mib"]), int(params["chunks"]), float(params["ratio"])
        rows = max(1, (mib << 20) // (4 * D))
        result = self.new_result(ctx, params)
        chunk_bytes = rows * D * 4
        what = f"streams-overlap with {n} chunks of {mib} MiB"
        fits.require_host_fit(n * chunk_bytes * 1.1, what)
        fits.require_fit(ctx, 6 * n * chunk_bytes + (64 << 20), what)  # chunks, outputs, copies
        import torch

        dev = ctx.torch_device
        was = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("highest")  # the same matmul on every run
        try:
            return self._run(ctx, result, torch, dev, rows, n, ratio, chunk_bytes)
        finally:
            torch.set_float32_matmul_precision(was)

    def _run(
        self, ctx: Context, result: Result, torch: Any, dev: str, rows: int, n: int,
        ratio: float, chunk_bytes: int,
    ) -> Result:  # fmt: skip
        ctx.progress(0.0, "measuring one copy and one compute")
        chunks = []
        for _ in range(n):
            host = torch.empty(rows, D, pin_memory=True)
            host.copy_(torch.randn(rows, D, device=dev))
            chunks.append(host)
        x0 = chunks[0].to(dev)
        probe_w = torch.randn(D, D, device=dev)
        copy_one = ctx.timer.measure(lambda: x0.copy_(chunks[0], non_blocking=True), sync="torch")
        mm_one = ctx.timer.measure(lambda: torch.tanh(x0 @ probe_w), sync="torch")
        m = columns_for(copy_one.median_s, mm_one.median_s, ratio)
        w = torch.randn(D, m, device=dev) / D**0.5
        serial, overlapped = _pipelines(torch, dev, w)
        on_device = [c.to(dev) for c in chunks]
        runs = {
            "serial": lambda: serial(chunks),
            "overlapped": lambda: overlapped(chunks),
            "copies": lambda: [c.to(dev, non_blocking=True) for c in chunks],
            "computes": lambda: [torch.tanh(x @ w) for x in on_device],
        }
        want = serial(chunks)
        got = overlapped(chunks)
        torch.cuda.synchronize()
        worst = max(float((a - b).abs().max()) for a, b in zip(want, got, strict=True))
        result.verdicts.append(
            Verdict.check(
                "overlapped", worst, 1e-5, metric="max abs difference from the serial run",
                reference="the serial pipeline's outputs", dtype="fp32",
            )
        )  # fmt: skip
        del want, got
        p = ceilings.peaks(ctx)
        h2d = ceilings.peak(p, "h2d")
        size = f"{n} x {chunk_bytes / 2**20:g} MiB"
        median: dict[str, float] = {}
        for i, (cid, fn) in enumerate(runs.items()):
            ctx.progress(0.1 + 0.7 * i / len(runs), cid)
            t = ctx.timer.measure(fn, sync="torch")
            moved = n * chunk_bytes if cid != "computes" else None
            result_rows.emit(
                ctx,
                result,
                row(
                    cid,
                    size,
                    t,
                    work=moved,
                    unit="GB/s" if moved else "",
                    scale=1e9,
                    dtype="fp32",
                    peak=h2d if moved else None,
                    peak_name="pinned host-to-device copy" if moved else "",
                    note="chunk bytes over the whole pipeline's time" if moved else "",
                ),
            )
            median[cid] = t.median_s
        ctx.progress(0.85, "timeline")
        lanes: dict[str, list] = {}
        pictures, ends = [], {}
        for name, fn in (("serial", serial), ("overlapped", overlapped)):
            torch.cuda.synchronize()
            origin = torch.cuda.Event(enable_timing=True)
            origin.record()
            these: dict[str, list] = {}
            fn(chunks, these)
            torch.cuda.synchronize()
            busy = {k: _busy(v, origin) for k, v in these.items()}
            ends[name] = max(b for spans in busy.values() for _, b in spans)
            lanes.update(busy)
        end = max(ends.values())
        for name in ("serial", "overlapped"):
            mine = ("one",) if name == "serial" else ("side", "main")
            part = {k: v for k, v in lanes.items() if k.startswith(mine)}
            pictures.append(f"{name} ({ends[name] * 1e3:.2f} ms)\n{timeline(part, end)}")
        result.artifacts.append(Artifact("timeline", "text", text="\n\n".join(pictures)))
        ideal = ideal_s(median["copies"], median["computes"], n)
        saved = median["serial"] - median["overlapped"]
        possible = median["serial"] - ideal
        result.summary = {
            "chunks": n,
            "chunk_bytes": chunk_bytes,
            "columns": m,
            "median_s": median,
            "ideal_s": ideal,
            "speedup": median["serial"] / median["overlapped"],
            "ideal_speedup": median["serial"] / ideal,
            "saved_s": saved,
            "saved_of_ideal": saved / possible if possible > 0 else None,
            "compute_over_copy": median["computes"] / median["copies"],
            "busy_intervals_s": {k: [list(s) for s in v] for k, v in lanes.items()},
            "timeline_end_s": ends,
        }
        result.explanation = (
            "A stream runs its work in order, so on one stream the copy engine and the SMs take "
            "turns: the serial time is copies plus computes. On two streams the copy of the next "
            "chunk runs on the copy engine while the SMs compute the current one, and the time "
            "falls towards the longer of the two (plus one chunk to fill the pipeline): the "
            "timeline shows the side stream's copies under the main stream's computes. "
            "It takes pinned memory (a pageable copy is staged by the CPU and does not overlap), "
            "an order between the streams (wait_stream before a compute reads its chunk) and "
            "record_stream on a buffer made on one stream and used on another. The gain is "
            "largest when copy and compute take about the same time (ratio=1)."
        )
        ctx.progress(1.0, "done")
        return self.finish(result)

    def headline(self, result: Result) -> str:
        s = result.summary
        t = s["median_s"]
        line = (
            f"overlapping copies with compute: {s['speedup']:.2f}x faster than serial "
            f"({t['serial'] * 1e3:.2f} ms -> {t['overlapped'] * 1e3:.2f} ms, "
            f"{s['saved_s'] * 1e3:.2f} ms saved)"
        )
        if s.get("saved_of_ideal") is not None:
            line += f"; {s['saved_of_ideal']:.0%} of what perfect overlap would save"
        return line


EXPERIMENT = StreamsOverlap()
