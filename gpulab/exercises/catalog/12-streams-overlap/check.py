"""Check for streams-overlap: a three-stage pipeline (copy in, compute, copy back), each stage on
its own engine.

The learner gets pinned host chunks, pinned host output buffers (`outs`, full of NaN) and the
check's `step` (two matmuls and tanh, on the current stream), and must leave step(chunk i) in
outs[i], on the host, for every chunk by the time the function returns. A GPU moves data each way
on copy engines of its own, beside the SMs: chunk i+1 can travel in while chunk i computes and
chunk i-1 travels back. The lesson's prefetcher overlaps one copy with the compute; here the copy
back is the larger copy, and it ends in host memory the caller reads at once.

What is checked:

1. every output, against a float64 reference, read from `outs` as soon as the function returns,
   in four shapes of pipeline sized from this GPU's measured copy and compute rates: one chunk;
   copy-in-bound (a step that does not wait for its copy reads the buffer before the data
   lands); compute-bound (a copy back that does not wait for its step reads an output not yet
   written; a copy in that overwrites, or gets from the allocator, a buffer a step still reads
   lands under it); copy-back-bound (an output handed back to the allocator while its copy back
   still reads it is overwritten by a later step). An output that holds another chunk's result
   is named as such;
2. what the call did, recorded while it ran (`_Watch`): every copy in and every copy back, with
   the stream it was queued on and whether its host memory was pinned, every host wait
   (a synchronize of the device, a stream or an event) the learner's own code made, and every
   output of step() let go while a copy back on another stream was still reading it, with
   nothing keeping its memory (no record_stream on that stream, no wait for it on the stream
   that made it): that fails whether or not the race spoiled an output this time. A chunk
   copied in from pageable memory, or an output brought back into pageable memory (`.cpu()`),
   fails: the CPU stages such a copy, and it overlaps nothing. A copy back with
   non_blocking=True only queues it: one queued after the function's last host wait means the
   function returned before its outputs were in `outs`, and fails whether or not it happened to
   land before the check looked (the grader's watch synchronizes the current stream after a call
   that used side streams, which can hide it);
3. the saving, in a balanced case (TIMED_CHUNKS chunks; the compute and the copy back each about
   twice the copy in): the learner's pipeline, the check's serial one (copy in, compute, copy
   back, ... on one stream, one wait at the end), our own three-stream pipeline, and the copies
   in, the computes and the copies back alone are timed in interleaved rounds (synchronized wall
   time, the median of each). Before every round each chunk is rewritten in place
   (gpulab.exercises.fresh) and their order rotated, and the learner's outputs are checked
   against the serial pipeline's, so code that keeps outputs from an earlier call fails. The
   learner's calls in the timed rounds are bare (`ctx.timed_calls()`, no recording); the first,
   untimed round is recorded as in 2. The learner's pipeline must save at least half of the time
   ours saves over the serial one on this GPU (gpulab.exercises.saving; where even ours saves too
   little here, the verdict says so and only correctness is graded). Perfect overlap, the busiest
   stage plus one chunk of each other stage, is named beside it, and where the learner's saving
   falls short the verdict says which copies shared the compute's stream, read from the
   recorded round.

With stage times 1 : 2 : 2 (in, compute, back) per chunk, the serial pipeline takes 5 a chunk,
perfect overlap about 2. The lesson's prefetcher with the copies back left on the compute
stream takes 4 a chunk (the two larger stages still take turns): it saves about a third of what
full overlap saves, and fails; overlapping only the copy back saves about two thirds, and
passes with a low grade.

Then the grade: the balanced pipeline's chunk bytes copied in per second, as a fraction of our
pipeline's timed beside it, with its share of this GPU's calibrated pinned host-to-device rate
(`h2d`) shown.
"""

from __future__ import annotations

import statistics
import sys
import time
import weakref
from typing import Any

from gpulab.exercises import api, saving
from gpulab.exercises.fresh import Refresher
from gpulab.exercises.own_work import OwnWorkError

ENTRY = "pipeline"
D = 1024  # columns of an input chunk (float32)
RTOL, ATOL = 1e-4, 1e-5  # float32 matmuls and tanh against float64 (or the serial run's float32)
_now = time.perf_counter  # bound before the learner's file is imported

# (name, chunks, rows, compute / copy in, copy back / copy in): sizes set in cases() from this
# GPU's measured rates
PLAN = (
    ("one chunk", 1, 512, 1.0, 1.0),
    (
        "copy-in-bound: the copies in take about 6x the compute and the copies back",
        4,
        1024,
        1 / 6,
        1 / 6,
    ),
    ("compute-bound: the computes take about 4x each copy", 6, 1024, 4.0, 1.0),
    ("copy-back-bound: the copies back take about 6x the compute", 5, 1024, 1 / 3, 2.0),
    ("balanced, timed against the serial pipeline", 8, 2048, 2.0, 2.0),
)
TIMED_ROWS, TIMED_CHUNKS = PLAN[-1][2], PLAN[-1][1]
KEPT = "does your code keep outputs from an earlier call?"


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


class _highest:
    """float32 matmuls in full float32 (no TF32), whatever an earlier job set; put back after."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __enter__(self) -> None:
        self.was = self.torch.get_float32_matmul_precision()
        self.torch.set_float32_matmul_precision("highest")

    def __exit__(self, *exc: object) -> None:
        self.torch.set_float32_matmul_precision(self.was)


def _round32(v: float, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(v / 32) * 32)))


# Widths measured once per check (this module is loaded fresh for each): the learner's timing
# spec and the yardstick's, built by two calls of timing(), time the same work
_measured: dict[tuple, tuple[int, int]] = {}


def _shape(rows: int, compute: float, back: float, device: str) -> tuple[int, int]:
    """(hidden width H, output width M) for which, on this GPU, a chunk of `rows` takes about
    `compute` x its copy in to compute and `back` x to copy back (times ~ linear in H and M)."""
    key = (rows, compute, back, device)
    if key not in _measured:
        _measured[key] = _measure(rows, compute, back, device)
    return _measured[key]


def _measure(rows: int, compute: float, back: float, device: str) -> tuple[int, int]:
    torch = _torch()
    host_in = torch.empty(rows, D, pin_memory=True)
    host_in.normal_()
    x = host_in.to(device)
    host_back = torch.empty(rows, D, pin_memory=True)
    copy_in = _median_time(lambda: x.copy_(host_in, non_blocking=True))
    copy_back = _median_time(lambda: host_back.copy_(x, non_blocking=True))
    m = _round32(back * D * copy_in / copy_back, 32, 8192)
    w1 = torch.randn(D, 1024, device=device) / D**0.5
    w2 = torch.randn(1024, m, device=device) / 32
    with _highest(torch):
        k1 = _median_time(lambda: torch.tanh(torch.tanh(x @ w1) @ w2))  # at H = 1024
    h = _round32(compute * copy_in / k1 * 1024, 32, 16384)
    return h, m


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for name, n, rows, compute, back in PLAN:
        h, m = _shape(rows, compute, back, ctx.device)
        seed = int(ctx.rng.integers(1 << 31))
        timed = name.startswith("balanced")
        args = {"chunks": n, "rows": rows, "h": h, "m": m, "seed": seed, "timed": timed}
        out.append(api.Case(f"{name} ({n} chunks of {rows} x {D} in, {rows} x {m} back)", args))
    return out


def _inputs(args: dict[str, Any], device: str, seed: int | None = None) -> tuple[list, list, Any]:
    """Pinned host chunks, pinned host outputs full of NaN, and the step's weights (on the
    GPU), drawn from the case's seed."""
    torch = _torch()
    g = torch.Generator(device=device).manual_seed(args["seed"] if seed is None else seed)
    rows, h, m = args["rows"], args["h"], args["m"]
    chunks, outs = [], []
    for _ in range(args["chunks"]):
        host = torch.empty(rows, D, pin_memory=True)
        host.copy_(torch.randn(rows, D, device=device, generator=g))
        chunks.append(host)
        outs.append(torch.full((rows, m), float("nan"), pin_memory=True))
    w1 = torch.randn(D, h, device=device, generator=g) / D**0.5
    w2 = torch.randn(h, m, device=device, generator=g) / h**0.5
    return chunks, outs, (w1, w2)


def _make_step(w: tuple[Any, Any]) -> Any:
    torch = _torch()
    w1, w2 = w

    def step(x: Any) -> Any:
        """tanh(tanh(x @ W1) @ W2) on the current stream; x must be a chunk on the GPU."""
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            where = x.device if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"step() wants a chunk on the GPU, got one on {where}: copy it first")
        if x.dim() != 2 or x.shape[1] != D:
            raise ValueError(f"step() wants a chunk of shape (rows, {D}), got {tuple(x.shape)}")
        return torch.tanh(torch.tanh(x @ w1) @ w2)

    return step


def expected(case: api.Case, ctx: api.Context) -> Any:
    """float64 outputs rounded to float32, on the host (the timed case is checked against the
    serial pipeline instead)."""
    torch = _torch()
    if case.args["timed"]:
        return None
    chunks, _, (w1, w2) = _inputs(case.args, ctx.device)
    w1, w2 = w1.double(), w2.double()
    return [
        torch.tanh(torch.tanh(c.to(ctx.device).double() @ w1) @ w2).float().cpu() for c in chunks
    ]


def _serial(chunks: list, outs: list, step: Any, device: str) -> None:
    """The check's pipeline: on one stream, each copy in, its compute, its copy back; one host
    wait at the end."""
    torch = _torch()
    for c, o in zip(chunks, outs, strict=True):
        o.copy_(step(c.to(device, non_blocking=True)), non_blocking=True)
    torch.cuda.current_stream().synchronize()


class _Watch:
    """What one call did, recorded while it ran, in order: ("in", pinned, stream) for a copy to
    the GPU, ("back", pinned, non_blocking, stream) for a copy to the host, ("wait", what) for a
    host wait made by the learner's own code, and ("freed", chunk) when an output of step() was
    let go while a copy back on another stream still read it (`Outputs`). Streams are CUDA
    stream handles; `caller` is the stream current when the call began."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.log: list[tuple] = []
        self.caller = 0
        self.waits = {
            torch.cuda.synchronize.__code__: "torch.cuda.synchronize()",
            torch.cuda.Stream.synchronize.__code__: "Stream.synchronize()",
            torch.cuda.Event.synchronize.__code__: "Event.synchronize()",
        }
        self.outputs = Outputs(torch, self.log)
        self.wait_stream = getattr(getattr(torch.cuda.Stream, "wait_stream", None), "__code__", 0)

    def __enter__(self) -> _Watch:
        from torch.overrides import TorchFunctionMode

        torch, log = self.torch, self.log
        self.caller = torch.cuda.current_stream().cuda_stream

        class Copies(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                name = getattr(func, "__name__", "")
                if name in ("to", "cuda", "cpu", "copy_", "__setitem__") and args:
                    _record(log, torch, name, args, kwargs, out, outputs)
                return out

        outputs = self.outputs
        self.mode = Copies()
        self.mode.__enter__()
        self.real_record_stream = getattr(torch.Tensor, "record_stream", None)
        if self.real_record_stream is not None:

            def record_stream(t: Any, stream: Any) -> Any:
                outputs.recorded(t, stream)
                return self.real_record_stream(t, stream)

            torch.Tensor.record_stream = record_stream
        self.before = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in self.waits:
            caller = frame.f_back
            if caller is not None and str(caller.f_globals.get("__name__", "")).startswith(
                "_gpulab_learner_"
            ):
                self.log.append(("wait", self.waits[frame.f_code]))
        elif event == "call" and frame.f_code is self.wait_stream:
            waiter, other = frame.f_locals.get("self"), frame.f_locals.get("stream")
            if waiter is not None and other is not None:
                self.outputs.waited(waiter.cuda_stream, other.cuda_stream)
        if self.before is not None:
            self.before(frame, event, arg)

    def step(self, step: Any) -> Any:
        """`step`, its outputs followed (Outputs.made)."""
        return handed(step, self.outputs)

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(self.before)
        if self.real_record_stream is not None:
            self.torch.Tensor.record_stream = self.real_record_stream
        self.mode.__exit__(None, None, None)


def handed(step: Any, outputs: Outputs | None) -> Any:
    """The step the learner's function is given: the same function in a recorded call and in a
    timed one (where `outputs` is None), so the two cannot be told apart by what step is."""

    def step_(x: Any) -> Any:
        y = step(x)
        return y if outputs is None else outputs.made(y)

    return step_


class Outputs:
    """Each output of step() in one call, from the stream it was made on to the moment Python lets
    it go. The caching allocator gives a freed block to the next allocation on the stream that
    made it at once; a copy back queued on another stream may still be reading it then, and a
    later step writes into it under the copy. So when an output is let go while a copy back on
    another stream has not finished reading it (its event not yet reached), and nothing kept the
    block (record_stream on that stream, or the making stream waiting for it since), the log
    gets ("freed", chunk). Read from what ran, whether or not the race spoiled an output.

    A copy that happens to have landed by then is no defence: on an H200 the copy back often
    outran Python's next line, and a pipeline without record_stream passed one seed in two. Only
    a host wait since the copy (a synchronize, or the copy itself blocking) with the copy landed
    keeps the block."""

    def __init__(self, torch: Any, log: list[tuple]) -> None:
        self.torch, self.log = torch, log
        self.live: dict[int, dict[str, Any]] = {}  # id(output) -> what it went through
        self.count = 0
        self.waits: list[tuple[int, int]] = []  # (waiting stream, stream waited for), in order

    def made(self, y: Any) -> Any:
        if not isinstance(y, self.torch.Tensor) or y.device.type != "cuda":
            return y
        info = {
            "chunk": self.count,
            "stream": self.torch.cuda.current_stream().cuda_stream,
            "copies": [],  # (stream, event recorded after the copy, waits seen before it)
            "recorded": set(),
        }
        self.count += 1
        self.live[id(y)] = info
        weakref.finalize(y, self._freed, id(y))
        return y

    def copied(self, src: Any, stream: int, blocking: bool = False) -> None:
        info = self.live.get(id(src))
        if info is None or stream == info["stream"] or blocking:
            return  # a blocking copy has landed before the host runs the next line
        done = self.torch.cuda.Event()
        done.record(self.torch.cuda.current_stream())
        info["copies"].append((stream, done, len(self.waits), self._host_waits()))

    def _host_waits(self) -> int:
        return sum(1 for e in self.log if e[0] == "wait")

    def recorded(self, t: Any, stream: Any) -> None:
        info = self.live.get(id(t))
        if info is not None:
            info["recorded"].add(getattr(stream, "cuda_stream", stream))

    def waited(self, waiter: int, other: int) -> None:
        self.waits.append((waiter, other))

    def _freed(self, key: int) -> None:
        info = self.live.pop(key, None)
        if info is None:
            return
        for stream, done, since, host_waits in info["copies"]:
            kept = stream in info["recorded"] or (info["stream"], stream) in self.waits[since:]
            waited = self._host_waits() > host_waits and done.query()
            if not kept and not waited:
                self.log.append(("freed", info["chunk"]))
                return


def _record(
    log: list,
    torch: Any,
    name: str,
    args: tuple,
    kwargs: dict,
    out: Any,
    outputs: Outputs | None = None,
) -> None:
    """A copy between host and GPU, if this call was one (see _Watch)."""
    if name == "copy_":
        dst, src = args[0], args[1] if len(args) > 1 else kwargs.get("src")
    elif name == "__setitem__":
        dst, src = args[0], args[2] if len(args) > 2 else None
    else:
        dst, src = out, args[0]
    if not (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)):
        return
    non_blocking = bool(kwargs.get("non_blocking")) or (
        name in ("copy_", "to") and any(a is True for a in args[2 if name == "copy_" else 1 :])
    )
    stream = torch.cuda.current_stream().cuda_stream
    if src.device.type == "cpu" and dst.device.type == "cuda":
        log.append(("in", bool(src.is_pinned()), stream))
    elif src.device.type == "cuda" and dst.device.type == "cpu":
        log.append(("back", bool(dst.is_pinned()), non_blocking and name != "__setitem__", stream))
        if outputs is not None:
            outputs.copied(src, stream, blocking=not non_blocking or name == "__setitem__")


def judge_call(log: list[tuple]) -> str:
    """Why one recorded call fails, or '' (plain data: CPU tests call this too)."""
    if any(e[0] == "in" and not e[1] for e in log):
        return (
            "a chunk went to the GPU from pageable memory (a host tensor that is not pinned: "
            "torch.cat, clone() or .float() on the host make one): the CPU stages such a copy "
            "and it cannot overlap the compute. Copy the pinned chunks you were given"
        )
    if any(e[0] == "back" and not e[1] for e in log):
        return (
            "an output came back into pageable host memory (.cpu(), or a host tensor that is not "
            "pinned): the CPU stages such a copy and waits for it, so it overlaps nothing. Copy "
            "each output straight into its pinned outs[i] (copy_ with non_blocking=True)"
        )
    freed = [e[1] for e in log if e[0] == "freed"]
    if freed:
        return (
            f"the output of step() for chunk {freed[0]} was let go while its copy back, queued on "
            "another stream, was still reading it: the allocator hands that memory to the next "
            "step on the stream that made it, which can write into it before the copy lands. "
            "Keep each output until its copy is done, or call record_stream on the stream that "
            "reads it"
        )
    waited = [i for i, e in enumerate(log) if e[0] == "wait" or (e[0] == "back" and not e[2])]
    queued = [i for i, e in enumerate(log) if e[0] == "back" and e[2]]
    if queued and (not waited or queued[-1] > waited[-1]):
        return (
            "your function returned before its copies to the host had landed: a copy with "
            "non_blocking=True only queues it, and the caller reads outs as soon as you return. "
            "Wait on the host for the last copy back (its stream's synchronize(), or an event "
            "recorded after it) before you return"
        )
    return ""


def placement(log: list[tuple], caller: int) -> dict[str, Any]:
    """Where the copies of a recorded call ran: {"in": ..., "back": ...} each "caller" (all on
    the stream the call was made on, where step() computes), "side" or "none", and "shared":
    whether a side stream held copies of both directions."""
    where: dict[str, Any] = {}
    streams: dict[str, set[int]] = {}
    for kind in ("in", "back"):
        seen = {e[-1] for e in log if e[0] == kind}
        streams[kind] = seen - {caller}
        where[kind] = "none" if not seen else ("caller" if seen == {caller} else "side")
    where["shared"] = bool(streams["in"] & streams["back"])
    return where


def _call(fn: Any, chunks: list, outs: list, step: Any, torch: Any) -> tuple[list, _Watch]:
    """One recorded call; the outputs as they were when it returned (copies of `outs`)."""
    with _Watch(torch) as seen:
        try:
            fn(chunks, outs, seen.step(step))
        except OwnWorkError:
            why = judge_call(seen.log)  # the more precise reason, where the log shows one
            if why:
                raise api.CheckError(why) from None
            raise
    got = [o.clone() for o in outs]
    why = judge_call(seen.log)
    if why:
        raise api.CheckError(why)
    return got, seen


def _wall(fn: Any, torch: Any) -> float:
    torch.cuda.synchronize()
    t0 = _now()
    fn()
    torch.cuda.synchronize()
    return _now() - t0


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    torch = _torch()
    args = case.args
    with _highest(torch):
        chunks, outs, w = _inputs(args, ctx.device)
        step = _make_step(w)
        if not args["timed"]:
            got, _ = _call(fn, chunks, outs, step, torch)
            torch.cuda.synchronize()
            return got
        return _rounds(fn, chunks, outs, step, ctx, torch)


def _rounds(
    fn: Any, chunks: list, outs: list, step: Any, ctx: api.Context, torch: Any
) -> dict[str, Any]:
    """Interleaved rounds of the learner's pipeline, the serial one, ours, and each stage
    alone; every round on the chunks rewritten and rotated by one more place."""
    dev = ctx.device
    n = len(chunks)
    serial_outs = [torch.empty_like(o, pin_memory=True) for o in outs]
    our_outs = [torch.empty_like(o, pin_memory=True) for o in outs]
    on_device = [c.to(dev) for c in chunks]
    computed = [step(x) for x in on_device]
    landing = [torch.empty_like(o, pin_memory=True) for o in outs]
    rounds = 5 if ctx.quick else 9
    out: dict[str, Any] = {
        k: [] for k in ("yours", "serial", "ours", "copies_in", "computes", "copies_back")
    }
    ours = ctx.reference()
    fresh = Refresher()
    bare = handed(step, None)
    for r in range(rounds + 1):  # round 0 is recorded, untimed, and warms every path up
        fresh(*chunks)
        order = [(i + r) % n for i in range(n)]
        mine, theirs = [chunks[i] for i in order], [outs[i] for i in order]
        for o in outs:
            o.fill_(float("nan"))
        made = len(ctx.watch.streams) if ctx.watch is not None else 0
        if r == 0:
            _, seen = _call(fn, mine, theirs, step, torch)
            torch.cuda.synchronize()
            out["waits"] = sum(e[0] == "wait" for e in seen.log)
            out["placement"] = placement(seen.log, seen.caller)
        else:
            with ctx.timed_calls():
                out["yours"].append(_wall(lambda m=mine, t=theirs: fn(m, t, bare), torch))
        made = (len(ctx.watch.streams) if ctx.watch is not None else 0) - made
        want = [serial_outs[i] for i in order]
        t_serial = _wall(lambda m=mine, w=want: _serial(m, w, step, dev), torch)
        kept = [our_outs[i] for i in order]
        t_ours = _wall(lambda m=mine, o=kept: ours(m, o, step), torch)
        t_in = _wall(lambda m=mine: [c.to(dev, non_blocking=True) for c in m], torch)
        t_compute = _wall(lambda: [step(x) for x in on_device], torch)
        t_back = _wall(
            lambda: [h.copy_(y, non_blocking=True) for h, y in zip(landing, computed, strict=True)],
            torch,
        )
        for k, (g, s) in enumerate(zip(theirs, want, strict=True)):
            bad = _mismatch(s, g, f"chunk {k} of {n}", want, dev)
            if bad is not None:
                if r:
                    bad.message = (
                        f"round {r + 1}, after every chunk was rewritten: {bad.message} ({KEPT})"
                    )
                out["mismatch"] = bad
                return out
        if r:
            out["streams_per_call"] = max(out.get("streams_per_call", 0), made)
            for key, t in (
                ("serial", t_serial),
                ("ours", t_ours),
                ("copies_in", t_in),
                ("computes", t_compute),
                ("copies_back", t_back),
            ):
                out[key].append(t)
    out["chunks"] = n
    return out


RACE = (
    "the output that reached outs was not step(this chunk) when it was copied: make the current "
    "stream wait for each copy in before step() reads it, make each copy back wait for its step "
    "(an event, or wait_stream), and keep every buffer from being reused while a copy or a step "
    "still uses it (record_stream on the stream that reads it)"
)


def _mismatch(
    want: Any, got: Any, where: str, others: list | None = None, device: str = "cpu"
) -> api.Mismatch | None:
    """Whether an output matches (float32 tensors of one chunk, compared on `device`); names
    another chunk's output where that is what it holds."""
    mine = want
    want, got = want.to(device), got.to(device)
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
    if gv != gv:
        why = f"never copied back, or after your function returned? Or: {RACE}"
    else:
        why = RACE
        for j, other in enumerate(others or []):
            if other is not mine and tuple(other.shape) == tuple(got.shape):
                o = other.to(device).double()
                if bool(((g - o).abs() <= ATOL + RTOL * o.abs()).all()):
                    why = f"it holds chunk {j}'s output. {RACE}"
                    break
    return api.Mismatch(
        f"{where}: outs[{idx[0]}, {idx[1]}] = {gv!r}, expected {wv!r}; {count} of "
        f"{got.numel()} wrong: {why}",
        index=idx,
        expected=wv,
        got=gv,
        wrong=count,
    )


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms"


def compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    if not case.args["timed"]:
        n = len(want)
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            bad = _mismatch(w, g, f"chunk {i} of {n}", want, ctx.device)
            if bad is not None:
                return bad
        return None
    if "mismatch" in got:
        return got["mismatch"]
    bad, note = judge_overlap(got)
    if note:
        ctx.notes.append(note)
    return bad


def _advice(got: dict[str, Any]) -> str:
    """What the recorded round shows about a pipeline that saved too little."""
    n = got["chunks"]
    waits, made = got.get("waits", 0), got.get("streams_per_call", 0)
    where = got.get("placement", {})
    if waits >= max(2, n // 2):
        return (
            f"your code waited on the host {waits} times in a call (synchronize): each wait "
            "stops it from queueing the next chunk's work while the GPU is busy; wait once, at "
            "the end"
        )
    if made:
        return (
            f"your code made {made} new stream(s) on every call: PyTorch's allocator caches "
            "memory per stream, so a new stream's copies allocate afresh (cudaMalloc, which can "
            "stall the GPU): make your streams once, at import or on the first call, and reuse them"
        )
    if where.get("in") == "caller" and where.get("back") == "caller":
        return (
            "your copies in and back all ran on the stream step() computes on, and one stream "
            "runs its work in turn: queue each copy in on a side stream ahead of its step, and "
            "each copy back on a third stream after it"
        )
    if where.get("back") == "caller":
        return (
            "your copies back ran on the stream step() computes on, so each step waited for the "
            "copy back before it, the two larger stages taking turns: give the copies back a "
            "stream of their own, ordered after each step with an event"
        )
    if where.get("in") == "caller":
        return (
            "your copies in ran on the stream step() computes on: queue chunk i+1's copy in on a "
            "side stream while chunk i computes"
        )
    if where.get("shared"):
        return (
            "your copies in and back shared one side stream, so each copy back waited behind a "
            "copy in and the other way round; each direction has a copy engine of its own: give "
            "each direction a stream"
        )
    return (
        "copy chunk i+1 in, compute chunk i and copy chunk i-1 back at the same time, each on a "
        "stream of its own"
    )


def judge_overlap(got: dict[str, Any]) -> tuple[api.Mismatch | None, str]:
    """The saving rule on the rounds' medians (plain numbers: CPU tests call this too): (why
    the learner's pipeline fails it, or None; the verdict's note where this GPU cannot show
    overlap)."""
    n = got["chunks"]
    stages = [statistics.median(got[k]) for k in ("copies_in", "computes", "copies_back")]
    ideal = max(stages) + (sum(stages) - max(stages)) / n
    rounds = list(zip(got["serial"], got["yours"], got["ours"], strict=True))
    bad, note = saving.judge(saving.Saving.of(rounds), what="pipeline", baseline="the serial one")
    if bad is None:
        return None, note
    copies_in, computes, copies_back = (_ms(s) for s in stages)
    bad.message += (
        f"; perfect overlap takes {_ms(ideal)} (copies in {copies_in}, computes {computes}, "
        f"copies back {copies_back}): {_advice(got)}"
    )
    return bad, note


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    torch = _torch()
    dev = ctx.device
    _, n, rows, compute, back = PLAN[-1]
    h, m = _shape(rows, compute, back, dev)
    args = {"chunks": n, "rows": rows, "h": h, "m": m}
    prec = _highest(torch)
    fresh = Refresher()

    def setup(i: int) -> dict[str, Any]:
        chunks, outs, w = _inputs({**args, "seed": 1000 + i}, dev)
        step = _make_step(w)
        return {
            "chunks": chunks,
            "outs": outs,
            "step": step,
            "handed": handed(step, None),
            "order": list(range(n)),
        }

    def prepare(s: dict[str, Any]) -> None:
        fresh(*s["chunks"])  # every element rewritten: an output kept from before is stale
        s["order"] = s["order"][1:] + s["order"][:1]
        for o in s["outs"]:
            o.fill_(float("nan"))

    def rotated(s: dict[str, Any]) -> tuple[list, list]:
        return [s["chunks"][i] for i in s["order"]], [s["outs"][i] for i in s["order"]]

    def learner(s: dict[str, Any]) -> Any:
        with prec:
            return fn(*rotated(s), s["handed"])

    def library(s: dict[str, Any]) -> Any:
        with prec:
            _serial(*rotated(s), s["step"], dev)

    def check_call(s: dict[str, Any], returned: Any) -> api.Mismatch | str | None:
        with prec:
            for i, (c, o) in enumerate(zip(s["chunks"], s["outs"], strict=True)):
                bad = _mismatch(s["step"](c.to(dev)), o, f"chunk {i}", device=dev)
                if bad is not None:
                    return bad
        return None

    return api.TimingSpec(
        setup=setup,
        learner=learner,
        library=library,
        library_name="serial pipeline (copy in, compute, copy back, ... on one stream)",
        work=n * rows * D * 4,
        metric="GB/s",
        ceiling="h2d",
        sync="torch",
        sets=2,
        note=f"{n} chunks of {rows} x {D} float32 in, {rows} x {m} back; the bytes copied in",
        prepare=prepare,
        check_call=check_call,
        # Side streams are the exercise: their work would not wait for a spin on the current
        # stream, and the host's pace of issuing chunks is part of what the overlap costs.
        lead=False,
    )
