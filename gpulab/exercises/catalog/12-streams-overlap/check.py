"""Check for streams-overlap: copy chunk i+1 to the GPU on a side stream while chunk i computes.

The learner gets pinned host chunks and the check's `step` (tanh(x @ W), on the current stream)
and returns step(chunk) for every chunk, on the GPU. What is checked:

1. every chunk's output, against a float64 reference, in three shapes of pipeline measured on
   this GPU when the check starts: one chunk; copy-bound (the copy takes several times the
   compute, so a step that does not wait for its copy reads the buffer before the data lands,
   from the first chunk on); compute-bound (the compute takes twice the copy, so a copy that
   overwrites, or reuses through the allocator, a buffer a step still reads lands under it);
2. no chunk is copied from pageable memory (a TorchFunctionMode sees every host-to-device
   copy): such a copy goes through a staging buffer and cannot overlap anything;
3. the saving, in a balanced case (compute about 0.9x the copy, 8 chunks): the learner's
   pipeline, the check's serial one (copy, compute, copy, ... on one stream), our own
   prefetching pipeline, the copies alone and the computes alone are timed in interleaved
   rounds (synchronized wall time, the median of each). The learner's must save at least half
   of the time ours saves over the serial one on this GPU (gpulab.exercises.saving; where ours
   saves too little here, the verdict says so and only correctness is graded). Perfect overlap,
   max(copies, computes) + the smaller of one copy and one compute, is named beside it. Every
   round's outputs are checked against the serial pipeline's on the same, rotated, chunks, so
   a buffer that still holds an earlier round's chunk shows. The learner's calls in the rounds
   are timed ones (`ctx.timed_calls()`), as bare as ours.

Then the grade: the balanced pipeline's chunk bytes per second against this GPU's calibrated
pinned host-to-device copy rate (`h2d`): serial reaches about half of it, perfect overlap
about 0.9 (the compute of the last chunk cannot hide).

Why half of what ours saves: a right prefetcher saves about as much as ours (the copy and the
compute share only HBM bandwidth, of which a 55 GB/s copy takes under 2%), while the serial and
synchronize-every-chunk pipelines save none; half leaves room for a loaded machine both ways.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from gpulab.exercises import api, saving

ENTRY = "overlapped"
D = 1024  # columns of a chunk (float32)
BALANCE = 0.9  # the balanced case's compute time over its copy time
RTOL, ATOL = 1e-4, 1e-5  # float32 matmul + tanh against float64 (or the serial run's float32)
_now = time.perf_counter  # bound before the learner's file is imported

# (name, chunks, rows, compute / copy): drawn sizes are set in cases() from this GPU's rates
PLAN = (
    ("one chunk", 1, 512, 1.0),
    ("copy-bound: the copies take about 6x the compute", 4, 1024, 1 / 6),
    ("compute-bound: the computes take about 2.5x the copy", 6, 1024, 2.5),
    ("balanced, timed against the serial pipeline", 8, 4096, BALANCE),
)
TIMED_ROWS, TIMED_CHUNKS = 4096, 8


def _torch() -> Any:
    import torch  # deferred: the catalog is read in processes that must not import torch

    return torch


def _median_time(fn: Any, repeats: int = 5) -> float:
    torch = _torch()
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = _now()
        fn()
        torch.cuda.synchronize()
        times.append(_now() - t0)
    return statistics.median(times)


def _rates(rows: int, device: str) -> tuple[float, float]:
    """(seconds to copy one pinned chunk of `rows` x D, seconds of step at m = D) here."""
    torch = _torch()
    host = torch.empty(rows, D, pin_memory=True)
    host.normal_()
    x = host.to(device)
    w = torch.randn(D, D, device=device)
    copy_s = _median_time(lambda: x.copy_(host, non_blocking=True))
    with _highest(torch):
        step_s = _median_time(lambda: torch.tanh(x @ w))
    return copy_s, step_s


def _columns(copy_s: float, step_s: float, ratio: float) -> int:
    """Output columns m for which step takes about `ratio` x the copy (time ~ linear in m)."""
    m = ratio * copy_s / step_s * D
    return int(min(8192, max(32, round(m / 32) * 32)))


class _highest:
    """float32 matmuls in full float32 (no TF32), whatever an earlier job set; put back after."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __enter__(self) -> None:
        self.was = self.torch.get_float32_matmul_precision()
        self.torch.set_float32_matmul_precision("highest")

    def __exit__(self, *exc: object) -> None:
        self.torch.set_float32_matmul_precision(self.was)


def cases(ctx: api.Context) -> list[api.Case]:
    rates = {rows: _rates(rows, ctx.device) for rows in sorted({p[2] for p in PLAN})}
    out = []
    for name, n, rows, ratio in PLAN:
        m = _columns(*rates[rows], ratio)
        seed = int(ctx.rng.integers(1 << 31))
        args = {"chunks": n, "rows": rows, "m": m, "seed": seed, "timed": name.startswith("bal")}
        out.append(api.Case(f"{name} ({n} x {rows} x {D} float32 chunks, m={m})", args))
    return out


def _inputs(args: dict[str, Any], device: str, seed: int | None = None) -> tuple[list, Any]:
    """Pinned host chunks and the weight W (on the GPU), drawn from the case's seed."""
    torch = _torch()
    g = torch.Generator(device=device).manual_seed(args["seed"] if seed is None else seed)
    chunks = []
    for _ in range(args["chunks"]):
        host = torch.empty(args["rows"], D, pin_memory=True)
        host.copy_(torch.randn(args["rows"], D, device=device, generator=g))
        chunks.append(host)
    w = torch.randn(D, args["m"], device=device, generator=g) / D**0.5
    return chunks, w


def _make_step(w: Any) -> Any:
    torch = _torch()

    def step(x: Any) -> Any:
        """tanh(x @ W) on the current stream; x must be a chunk on the GPU."""
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            where = x.device if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"step() wants a chunk on the GPU, got one on {where}: copy it first")
        if tuple(x.shape) != (x.shape[0], D):
            raise ValueError(f"step() wants a chunk of shape (rows, {D}), got {tuple(x.shape)}")
        return torch.tanh(x @ w)

    return step


def expected(case: api.Case, ctx: api.Context) -> Any:
    """float64 outputs on the GPU (the timed case is checked against the serial pipeline)."""
    torch = _torch()
    if case.args["timed"]:
        return None
    chunks, w = _inputs(case.args, ctx.device)
    w64 = w.double()
    return [torch.tanh(c.to(ctx.device).double() @ w64) for c in chunks]


def _serial(chunks: list, step: Any, device: str) -> list:
    """The check's pipeline: on one stream, each copy then its compute."""
    return [step(c.to(device, non_blocking=True)) for c in chunks]


class _Watching:
    """Around the learner's calls: host-to-device copies from pageable memory, and the host
    waits (synchronize) the learner's own code made."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.pageable: list[str] = []
        self.waits = 0

    def __enter__(self) -> _Watching:
        from torch.overrides import TorchFunctionMode

        torch, seen = self.torch, self

        class _Copies(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                out = func(*args, **(kwargs or {}))
                name = getattr(func, "__name__", "")
                if name in ("to", "cuda", "copy_") and args:
                    src, dst = (args[1], args[0]) if name == "copy_" else (args[0], out)
                    if (
                        isinstance(src, torch.Tensor)
                        and isinstance(dst, torch.Tensor)
                        and src.device.type == "cpu"
                        and dst.device.type == "cuda"
                        and not src.is_pinned()
                    ):
                        seen.pageable.append(f"Tensor.{name}")
                return out

        self.mode = _Copies()
        self.mode.__enter__()
        self.patched: list[tuple[Any, str, Any]] = []
        for owner, attr in (
            (torch.cuda, "synchronize"),
            (torch.cuda.streams.Stream, "synchronize"),
            (torch.cuda.Event, "synchronize"),
        ):
            real = getattr(owner, attr)
            self.patched.append((owner, attr, real))
            setattr(owner, attr, self._counting(real))
        return self

    def _counting(self, real: Any) -> Any:
        seen = self

        def wait(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith("_gpulab_learner_"):
                seen.waits += 1
            return real(*args, **kwargs)

        return wait

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__(None, None, None)
        for owner, attr, real in reversed(self.patched):
            setattr(owner, attr, real)


def _returned(got: Any, n: int) -> list:
    torch = _torch()
    if not isinstance(got, (list, tuple)):
        raise api.CheckError(
            f"overlapped returned {type(got).__name__}: expected a list of {n} outputs, "
            "step(chunk) for every chunk in order"
        )
    if len(got) != n:
        raise api.CheckError(f"overlapped returned {len(got)} outputs for {n} chunks")
    for i, t in enumerate(got):
        if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
            raise api.CheckError(f"output {i} is not a tensor on the GPU: return step()'s outputs")
    return list(got)


def _call(fn: Any, chunks: list, step: Any, torch: Any) -> tuple[list, _Watching]:
    with _Watching(torch) as seen:
        got = fn(chunks, step)
    if seen.pageable:
        raise api.CheckError(
            f"a chunk went to the GPU from pageable memory ({seen.pageable[0]} of a host tensor "
            "that is not pinned; torch.cat, clone() or .float() on the host make one): such a "
            "copy is staged by the CPU and cannot overlap the compute. Copy the pinned chunks "
            "you were given"
        )
    return _returned(got, len(chunks)), seen


def _wall(fn: Any, torch: Any) -> tuple[float, Any]:
    torch.cuda.synchronize()
    t0 = _now()
    out = fn()
    torch.cuda.synchronize()
    return _now() - t0, out


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    torch = _torch()
    args = case.args
    with _highest(torch):
        chunks, w = _inputs(args, ctx.device)
        step = _make_step(w)
        if not args["timed"]:
            got, _ = _call(fn, chunks, step, torch)
            torch.cuda.synchronize()
            return got
        return _rounds(fn, chunks, step, ctx, torch)


def _rounds(fn: Any, chunks: list, step: Any, ctx: api.Context, torch: Any) -> dict[str, Any]:
    """Interleaved rounds of the learner's pipeline, the serial one, the copies alone and the
    computes alone; every round on the chunks rotated by one more place."""
    dev = ctx.device
    on_device = [c.to(dev) for c in chunks]
    rounds = 5 if ctx.quick else 9
    out: dict[str, Any] = {
        "yours": [],
        "serial": [],
        "ours": [],
        "copies": [],
        "computes": [],
        "waits": 0,
    }
    n = len(chunks)
    ours = ctx.reference()
    for r in range(rounds + 1):  # round 0 warms every path up and is not counted
        order = [(i + r) % n for i in range(n)]
        mine = [chunks[i] for i in order]
        made = len(ctx.watch.streams) if ctx.watch is not None else 0
        with ctx.timed_calls():
            t_yours, (got, seen) = _wall(lambda m=mine: _call(fn, m, step, torch), torch)
        made = (len(ctx.watch.streams) if ctx.watch is not None else 0) - made
        t_serial, want = _wall(lambda m=mine: _serial(m, step, dev), torch)
        t_ours, _ = _wall(lambda m=mine: _call(ours, m, step, torch), torch)
        t_copies, _ = _wall(lambda m=mine: [c.to(dev, non_blocking=True) for c in m], torch)
        t_computes, _ = _wall(lambda: [step(x) for x in on_device], torch)
        for i, (g, s) in enumerate(zip(got, want, strict=True)):
            bad = _device_mismatch(s, g, f"chunk {i} of {n} (round {r + 1})", torch)
            if bad is not None:
                out["mismatch"] = bad
                return out
        if r == 0:
            continue
        out["waits"] = max(out["waits"], seen.waits)
        out["streams_per_call"] = max(out.get("streams_per_call", 0), made)
        for key, t in (
            ("yours", t_yours),
            ("serial", t_serial),
            ("ours", t_ours),
            ("copies", t_copies),
            ("computes", t_computes),
        ):
            out[key].append(t)
    out["chunks"] = n
    return out


RACE = (
    "the data step() read was not this chunk when it ran: make the current stream wait for "
    "the copy (wait_stream, or an event) before step() uses a chunk, and do not let a copy "
    "overwrite a buffer, or the allocator hand it out again (record_stream), while a step "
    "still reads it"
)


def _device_mismatch(want: Any, got: Any, where: str, torch: Any) -> api.Mismatch | None:
    if tuple(got.shape) != tuple(want.shape):
        return api.Mismatch(
            f"{where}: output shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        )
    g, w = got.double(), want.double()
    wrong = ~((g - w).abs() <= ATOL + RTOL * w.abs())  # NaN is wrong too
    count = int(wrong.sum())
    if not count:
        return None
    flat = int(wrong.reshape(-1).nonzero()[0])
    idx = (flat // got.shape[1], flat % got.shape[1])
    gv, wv = float(g.reshape(-1)[flat]), float(w.reshape(-1)[flat])
    return api.Mismatch(
        f"{where}: out[{idx[0]}, {idx[1]}] = {gv!r}, expected {wv!r}; {count} of "
        f"{got.numel()} wrong: {RACE}",
        index=idx,
        expected=wv,
        got=gv,
        wrong=count,
    )


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms"


def compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    torch = _torch()
    if not case.args["timed"]:
        n = len(want)
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            bad = _device_mismatch(w, g, f"chunk {i} of {n}", torch)
            if bad is not None:
                return bad
        return None
    if "mismatch" in got:
        return got["mismatch"]
    bad, note = judge_overlap(got)
    if note:
        ctx.notes.append(note)
    return bad


def judge_overlap(got: dict[str, Any]) -> tuple[api.Mismatch | None, str]:
    """The saving rule on the rounds' medians (plain numbers: CPU tests call this too): (why
    the learner's pipeline fails it, or None; the verdict's note where this GPU cannot show
    overlap)."""
    n = got["chunks"]
    copies, computes = statistics.median(got["copies"]), statistics.median(got["computes"])
    ideal = max(copies, computes) + min(copies, computes) / n
    rounds = list(zip(got["serial"], got["yours"], got["ours"], strict=True))
    bad, note = saving.judge(saving.Saving.of(rounds), what="pipeline", baseline="the serial one")
    if bad is None:
        return None, note
    waits, made = got.get("waits", 0), got.get("streams_per_call", 0)
    if waits >= max(2, n // 2):
        why = (
            f"your code waited on the host {waits} times per call (synchronize): each wait "
            "stops it from queueing the next copy while the GPU computes"
        )
    elif made:
        why = (
            f"your code made {made} new stream(s) on every call: PyTorch's allocator caches "
            "memory per stream, so a new stream's copies allocate afresh (cudaMalloc, which can "
            "stall the GPU): make your streams once, at import or on the first call, and reuse them"
        )
    else:
        why = "copy chunk i+1 on a side stream while chunk i computes on the current one"
    bad.message += (
        f"; perfect overlap takes {_ms(ideal)} (copies {_ms(copies)}, computes "
        f"{_ms(computes)}): {why}"
    )
    return bad, note


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    torch = _torch()
    dev = ctx.device
    copy_s, step_s = _rates(TIMED_ROWS, dev)
    args = {"chunks": TIMED_CHUNKS, "rows": TIMED_ROWS, "m": _columns(copy_s, step_s, BALANCE)}
    prec = _highest(torch)

    def setup(i: int) -> dict[str, Any]:
        chunks, w = _inputs({**args, "seed": 1000 + i}, dev)
        step = _make_step(w)
        with prec:
            refs = _serial(chunks, step, dev)
        return {"base": chunks, "step": step, "refs": refs, "order": list(range(len(chunks)))}

    def prepare(s: dict[str, Any]) -> None:
        s["order"] = s["order"][1:] + s["order"][:1]  # a buffer left from the last call is stale

    def learner(s: dict[str, Any]) -> Any:
        with prec:
            return fn([s["base"][i] for i in s["order"]], s["step"])

    def library(s: dict[str, Any]) -> Any:
        with prec:
            return _serial([s["base"][i] for i in s["order"]], s["step"], dev)

    def check_call(s: dict[str, Any], returned: Any) -> api.Mismatch | str | None:
        got = _returned(returned, len(s["order"]))
        for k, i in enumerate(s["order"]):
            bad = _device_mismatch(s["refs"][i], got[k], f"chunk {k}", torch)
            if bad is not None:
                return bad
        return None

    return api.TimingSpec(
        setup=setup,
        learner=learner,
        library=library,
        library_name="serial pipeline (copy, compute, copy, ... on one stream)",
        work=TIMED_CHUNKS * TIMED_ROWS * D * 4,
        metric="GB/s",
        ceiling="h2d",
        sync="torch",
        sets=2,
        note=f"{TIMED_CHUNKS} chunks of {TIMED_ROWS} x {D} float32 through copy and compute",
        prepare=prepare,
        check_call=check_call,
        # Side streams are the exercise: their work would not wait for a spin on the current
        # stream, and the host's pace of issuing chunks is part of what the overlap costs.
        lead=False,
    )
