"""The static tier's rules: findings for one kernel, from its compiled code, its launch and the
GPU's shape.

A rule is a small function of a `Subject` (everything known about one compiled kernel) that
returns a Finding, a list of them (one per source line), or None; `RULES` lists them in the order
the card shows ties, and `findings()` runs them all. A new rule is one function and one entry in
the list. The scores (findings.py) rank the suspects: a 32-way bank conflict or an uncoalesced
store outranks an occupancy of 50%, which outranks scalar loads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gpulab.core.nvrtc import PtxasInfo
from gpulab.explain import access, frequency, inflight, pressure
from gpulab.explain import occupancy as occ
from gpulab.explain.arch import Arch
from gpulab.explain.cubin import Resources
from gpulab.explain.findings import Finding, Tag, gather
from gpulab.explain.ptx import Access, Facts, padd, pconst, pformat, psplit
from gpulab.explain.source import Big, KernelSource


@dataclass
class Launch:
    """The launch a kernel is explained for."""

    block: tuple[int, ...] | None
    grid: tuple[Any, ...] | None  # ints; Big where it grows with the input
    shared_dynamic: int = 0
    # "measured" (a record of a real launch), "static" (a Triton kernel: its warps as compiled,
    # its grid from the learner's call on the timed inputs) or "estimated" (read from the source)
    source: str = "estimated"
    line: int | None = None  # where the source launches it

    @property
    def threads(self) -> int | None:
        """Threads per block, or None when unknown."""
        return math.prod(self.block) if self.block else None

    @property
    def blocks(self) -> int | Big | None:
        """Blocks in the grid: a number, Big when it grows with the input, None when unknown."""
        if self.grid is None:
            return None
        if any(isinstance(g, Big) for g in self.grid):
            return Big()
        return math.prod(int(g) for g in self.grid)

    def to_dict(self) -> dict[str, Any]:
        """The launch as JSON-ready data."""
        grid = None
        if self.grid is not None:
            grid = ["grows with n" if isinstance(g, Big) else int(g) for g in self.grid]
        return {
            "block": list(self.block) if self.block else None,
            "grid": grid,
            "shared_dynamic": self.shared_dynamic,
            "source": self.source,
            "line": self.line,
        }


@dataclass
class Device:
    """The device findings assume: its arch, SM count, name and where the count came from."""

    arch: Arch
    sms: int
    name: str
    sms_source: str  # "measured" (the GPU said) or "estimated" (a card's count)


@dataclass(frozen=True)
class TritonFacts:
    """What the rules need to word a Triton kernel's findings: what Triton's specialisation on
    the call's arguments could not assume (a pointer 16-byte aligned, an integer a multiple of
    16), and the autotune config it was compiled with ("" for none)."""

    unaligned: list[str]
    indivisible: dict[str, int]
    config: str = ""


SHORT = {"load": "ld", "store": "st", "atomic": "atom"}


@dataclass
class Subject:
    """One compiled kernel as the rules see it."""

    ks: KernelSource
    res: Resources
    info: PtxasInfo | None  # ptxas's own report (spills), when it printed one
    dev: Device
    facts: Facts | None  # read from the PTX; None when the kernel's PTX could not be read
    launch: Launch | None
    metric: str | None  # the exercise's: GB/s, TFLOP/s or None
    occupancy: occ.Occupancy | None = None  # of the launch (occupancy_of), None without one
    driver_blocks: int | None = None  # blocks per SM the driver computed (--gpu)
    bandwidth_gbs: float | None = None  # this GPU's calibrated copy, when known
    triton: TritonFacts | None = None  # a Triton kernel's: its lines are file lines

    @property
    def arch(self) -> Arch:
        """The architecture the kernel was compiled for."""
        return self.dev.arch

    @property
    def max_threads(self) -> int:
        """The largest block the kernel can launch with: launch bounds, then registers."""
        return min(
            self.res.max_threads or 1024, occ.max_threads_for_regs(self.arch, self.res.registers)
        )

    @property
    def block(self) -> tuple[int, ...]:
        """The launch's block shape, or 256 threads when the launch is not known."""
        return (self.launch.block if self.launch else None) or (256,)

    @property
    def access_tag(self) -> Tag:
        """static under a recorded launch; estimated under a launch read from the source."""
        return "estimated" if not self.launch or self.launch.source == "estimated" else "static"

    @cached_property
    def weights(self) -> frequency.Weights | None:
        """How often each PTX instruction runs (frequency.py), or None without the PTX."""
        if self.facts is None or self.facts.function is None:
            return None
        return frequency.weights(self.facts.function, self.facts, self.block)

    def weight(self, accesses: list[Access], spaces: tuple[str, ...]) -> tuple[float, str]:
        """How often the busiest of `accesses` runs against the kernel's busiest access to the
        memory `spaces` (1.0: as often), and why it runs less ("" when it does not)."""
        w = self.weights
        if w is None or self.facts is None:
            return 1.0, ""
        among = [a.index for a in self.facts.accesses if a.space in spaces]
        a = max(accesses, key=lambda x: w.of(x.index))
        rel = w.relative(a.index, among)
        return rel, (w.reason(a.index) if rel < 1.0 else "")


Rule = Callable[[Subject], "Finding | list[Finding] | None"]


def _tag(*sources: str) -> Tag:
    return "estimated" if "estimated" in sources else "static"


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def occupancy_of(
    ks: KernelSource, res: Resources, launch: Launch | None, dev: Device, driver_blocks: int | None
) -> occ.Occupancy | None:
    """The occupancy of `launch` (None without a block size); the driver's count of blocks per
    SM, when it gave one, replaces the calculator's."""
    block = launch.threads if launch else None
    if not block:
        return None
    arch = dev.arch
    max_threads = min(res.max_threads or 1024, occ.max_threads_for_regs(arch, res.registers))
    o = occ.compute(
        arch,
        block,
        res.registers,
        res.shared_static,
        (launch.shared_dynamic if launch else 0) or 0,
        max_threads=max_threads,
    )
    if driver_blocks is not None and driver_blocks != o.blocks_per_sm:
        o.limits["driver"] = driver_blocks
        o.blocks_per_sm = driver_blocks
        o.warps_per_sm = driver_blocks * math.ceil(block / arch.warp)
    return o


def findings(s: Subject) -> list[Finding]:
    """Every static rule's findings for one kernel, in the order of RULES."""
    return gather(RULES, s)


# -- resources ---------------------------------------------------------------------------------


def resources(s: Subject) -> Finding:
    """What ptxas gave the kernel: registers, shared and local memory, the largest block."""
    res, arch, max_threads = s.res, s.arch, s.max_threads
    shared = res.shared_static
    kind_of_shared = "static shared memory"
    if s.triton is not None and s.launch is not None:  # Triton's shared memory is all dynamic
        shared += s.launch.shared_dynamic
        kind_of_shared = "shared memory (Triton asks for it at launch)"
    return Finding(
        kind="resources",
        what="resources",
        value=f"{res.registers} regs, {_kb(shared)} shared, {res.local_bytes} B local",
        verdict=f"up to {max_threads} threads/block",
        tag="static",
        line=s.ks.line,
        kernel=s.ks.name,
        detail=(
            f"ptxas for {arch.name}: {res.registers} registers a thread,"
            f" {shared} bytes of {kind_of_shared} a block,"
            f" {res.local_bytes} bytes of local memory (stack) a thread; a block may have"
            f" at most {max_threads} threads"
            + (
                f" ({'num_warps' if s.triton else '__launch_bounds__'} {res.max_threads})"
                if res.max_threads
                else ""
            )
        ),
        data={
            "registers": res.registers,
            "shared_static": res.shared_static,
            "local_bytes": res.local_bytes,
            "max_threads": max_threads,
            "launch_bounds": res.max_threads,
            "maxreg": res.maxreg,
        },
    )


def _spilled(s: Subject) -> int:
    return (s.info.spill_stores + s.info.spill_loads) if s.info else 0


def spills(s: Subject) -> Finding | None:
    """Registers spilled to local memory, by ptxas's own count."""
    info, res, arch = s.info, s.res, s.arch
    if info is None or not _spilled(s):
        return None
    capped = res.maxreg is not None and res.maxreg < arch.max_regs_per_thread
    fn = s.facts.function if s.facts is not None else None
    peak = pressure.peak(fn) if fn is not None else pressure.Peak(0, None)
    where = s.ks.file_line(peak.line)
    return Finding(
        kind="spills",
        what="spills",
        value=f"st/ld {info.spill_stores}/{info.spill_loads} B",
        verdict=f"regs capped at {res.maxreg}" if capped else f"{res.registers} regs not enough",
        advice="loosen launch bounds" if capped else "fewer live values",
        tag="static",
        score=3.6,
        line=where or s.ks.line,
        kernel=s.ks.name,
        detail=(
            "ptxas ran out of registers and keeps values in local memory: per thread"
            f" {info.spill_stores} bytes of spill stores and {info.spill_loads} of spill"
            " loads in the code (each executed as often as its loop runs), through L1 to"
            " DRAM. "
            + (
                f"__launch_bounds__ caps registers at {res.maxreg}: allow fewer blocks"
                " per SM (its second argument) or smaller blocks."
                if capped
                else "Keep fewer values alive at once (smaller unrolled arrays)."
            )
            + (
                f" The most values are alive at kernel line {peak.line} (about"
                f" {peak.registers} registers in the PTX): the spills start there."
                if peak.line
                else ""
            )
        ),
        data={
            "spill_stores": info.spill_stores,
            "spill_loads": info.spill_loads,
            "peak_registers": peak.registers,
            "peak_kernel_line": peak.line,
        },
    )


def local_memory(s: Subject) -> Finding | None:
    """Local memory that is not a spill: a run-time indexed array, or a stack frame."""
    ks, res = s.ks, s.res
    local_lines = sorted(
        {a.line for a in (s.facts.accesses if s.facts else []) if a.space == "local" and a.line}
    )
    if (s.info is not None and _spilled(s)) or not (res.local_bytes or local_lines):
        return None
    line = ks.file_line(local_lines[0]) if local_lines else None
    return Finding(
        kind="local-memory",
        what="local mem",
        value=f"{res.local_bytes} B/thread stack",
        verdict="an array in local memory" if local_lines else "a stack frame",
        advice="constant indices, or shared" if local_lines else "inline the calls",
        tag="static",
        score=2.5,
        line=line or ks.line,
        kernel=ks.name,
        detail=(
            (
                "A per-thread array indexed with a run-time value cannot live in"
                " registers: it goes to local memory (cached in L1, backed by DRAM)."
                f" Kernel lines {local_lines} read or write it (ld.local / st.local)."
            )
            if local_lines
            else "ptxas gave the kernel a stack frame in local memory (cached in L1,"
            " backed by DRAM) without spilling: calls that were not inlined, or"
            " printf."
        ),
        data={"local_bytes": res.local_bytes, "kernel_lines": local_lines},
    )


# -- the launch --------------------------------------------------------------------------------


def occupancy(s: Subject) -> Finding | None:
    """Resident warps over the SM's maximum for the launch, and what limits them."""
    o, launch, ks, arch = s.occupancy, s.launch, s.ks, s.arch
    if o is None or launch is None or not launch.threads:
        return None
    block = launch.threads
    tag: Tag = "measured" if s.driver_blocks is not None else _tag(launch.source)
    line = launch.line or ks.line
    if o.blocks_per_sm == 0:
        return Finding(
            kind="launch-fails",
            what="launch",
            value=f"block of {block}",
            verdict="cannot launch",
            advice=f"at most {s.max_threads} threads/block",
            tag=tag,
            score=5.0,
            line=line,
            kernel=ks.name,
            detail=o.why_none or "no block of this size fits on an SM",
            data=o.to_dict(),
        )
    pct = f"{o.fraction:.0%} ({o.warps_per_sm}/{o.max_warps_per_sm} warps)"
    wpb = math.ceil(block / arch.warp)
    src = {
        "measured": "a launch the grader recorded",
        "static": "your function's launch on the timed inputs, as Triton compiled it",
    }.get(launch.source, "your source")
    detail = (
        f"A block of {block} threads ({wpb} warps, from {src}) on {arch.name}: the SM holds"
        f" {o.blocks_per_sm} blocks; by each rule: "
        + ", ".join(f"{k} {v}" for k, v in o.limits.items())
        + ". Occupancy is resident warps over the SM's maximum."
    )
    if o.fraction >= 1.0:
        return Finding(
            kind="occupancy",
            what="occupancy",
            value=pct,
            verdict="full",
            tag=tag,
            line=line,
            kernel=ks.name,
            detail=detail,
            data=o.to_dict(),
        )
    lim = o.limiter
    if lim == "blocks per SM":
        need = math.ceil(arch.max_warps_per_sm / arch.max_blocks_per_sm) * arch.warp
        verdict = f"{arch.max_blocks_per_sm} blocks/SM cap"
        advice = f"{need}+ threads/block"
    elif lim == "registers":
        verdict = f"{s.res.registers} regs/thread"
        advice = "fewer live values"
    elif lim == "shared memory":
        used = s.res.shared_static + (launch.shared_dynamic or 0)
        verdict = f"{_kb(used)} shared/block"
        advice = "less shared/block"
    else:
        verdict = f"{o.blocks_per_sm} blocks of {block} fit"
        advice = f"a block size dividing {arch.max_threads_per_sm}"
    flight = _flight(s, o)
    data = {**o.to_dict(), "limiter": lim}
    if flight is None:
        # Nothing to weigh the warps against: a compute-bound kernel hides latency with
        # independent instructions as well as warps, so its missing warps count for less.
        score = (2.5 if s.metric == "TFLOP/s" else 4.0) * (1.0 - o.fraction)
    else:
        data["in_flight"] = flight.to_dict()
        detail += " " + _little(flight, s)
        score = (2.5 if flight.unit == "FMA" else 4.0) * flight.loss
        if flight.loss <= 0.0:
            verdict = f"{flight.amount(flight.have)}/SM in flight, {flight.amount(flight.need)}"
            verdict += " needed"
            advice = ""
    return Finding(
        kind="occupancy",
        what="occupancy",
        value=pct,
        verdict=verdict,
        advice=advice,
        tag=tag,
        score=score,
        line=line,
        kernel=ks.name,
        detail=detail,
        data=data,
    )


def _flight(s: Subject, o: occ.Occupancy) -> inflight.Flight | None:
    """Little's law for the launch: the warp FMAs a compute-bound kernel keeps in flight, else
    the bytes of loads, against what the SM needs; None when the PTX shows neither."""
    facts, arch = s.facts, s.arch
    if facts is None:
        return None
    warps, full = o.warps_per_sm, arch.max_warps_per_sm
    if s.metric == "TFLOP/s":
        chains = inflight.fma_chains(facts)
        if chains:
            need = arch.fp32_lanes_per_sm / arch.warp * inflight.FMA_LATENCY_CLOCKS
            return inflight.Flight("FMA", chains, warps * chains, need, full * chains)
    per_thread = inflight.load_bytes(facts, s.weights)
    if not per_thread:
        return None
    bandwidth = s.bandwidth_gbs or arch.bandwidth_gbs
    need = bandwidth * inflight.DRAM_LATENCY_NS / s.dev.sms  # GB/s x ns = bytes
    threads = arch.warp * per_thread
    return inflight.Flight("B", per_thread, warps * threads, need, full * threads)


def _little(f: inflight.Flight, s: Subject) -> str:
    """Little's law for the occupancy line's detail: what is in flight against what is needed."""
    if f.unit == "FMA":
        what = (
            f"Each thread runs {f.per_thread:.0f} independent FMA chains in its busiest loop, so"
            f" the resident warps keep {f.amount(f.have)} in flight an SM; by Little's law the"
            f" SM needs {f.amount(f.need)}"
            f" ({s.arch.fp32_lanes_per_sm // s.arch.warp} warp FMAs a clock x"
            f" {inflight.FMA_LATENCY_CLOCKS} clocks of latency)."
        )
    else:
        bw = s.bandwidth_gbs or s.arch.bandwidth_gbs
        source = "the calibrated copy" if s.bandwidth_gbs else f"{s.arch.card}'s datasheet"
        what = (
            f"Each thread has {f.per_thread:.0f} B of global loads in flight on its busiest path"
            f" (issued before the first is used), so the resident warps hold"
            f" {f.amount(f.have)} an SM; by Little's law the SM needs {f.amount(f.need)}"
            f" ({bw:,.0f} GB/s from {source} x {inflight.DRAM_LATENCY_NS:.0f} ns of assumed"
            f" latency / {s.dev.sms} SMs)."
        )
    if f.loss <= 0.0:
        return what + " More warps would not help: the occupancy is not the limit."
    return (
        what + " More warps would lift the share of the roof the work in flight can sustain"
        f" from {f.reach:.0%} to {f.reach_full:.0%}; more of it a thread (several elements,"
        " float4, more outputs a thread) does the same without them."
    )


def waves(s: Subject) -> Finding | None:
    """How the grid fills the GPU: the waves of blocks, and the last one's tail."""
    launch, o, dev, ks = s.launch, s.occupancy, s.dev, s.ks
    blocks = launch.blocks if launch else None
    if launch is None or blocks is None or o is None or o.blocks_per_sm == 0:
        return None
    tag = _tag(launch.source, dev.sms_source)
    line = launch.line or ks.line
    if isinstance(blocks, Big):
        return Finding(
            kind="waves",
            what="waves",
            value="grid grows with the input",
            verdict="many waves at the timed size",
            tag="estimated",
            line=line,
            kernel=ks.name,
            detail="The grid is sized from the input (n / block), so a large input makes"
            " many waves and the last, partial one costs little.",
        )
    w = occ.Waves(int(blocks), dev.sms * o.blocks_per_sm, dev.sms)
    data = w.to_dict()
    sms_note = f" ({dev.sms} SMs: {dev.name})"
    if w.blocks < dev.sms:
        idle = dev.sms - w.blocks
        return Finding(
            kind="waves",
            what="grid",
            value=f"{w.blocks} block{'s' * (w.blocks > 1)} for {dev.sms} SMs",
            verdict=f"{idle} SMs idle",
            advice=f"use {w.per_wave}+ blocks",
            tag=tag,
            score=4.0 * idle / dev.sms,
            line=line,
            kernel=ks.name,
            detail=f"A block runs on one SM; {w.blocks} blocks keep {w.blocks} SMs busy"
            f" and leave {idle} idle{sms_note}. The GPU holds {w.per_wave} blocks at once"
            f" ({o.blocks_per_sm} per SM).",
            data=data,
        )
    if w.waves < 1.0:
        return Finding(
            kind="waves",
            what="grid",
            value=f"{w.waves:.2f} waves ({w.blocks}/{w.per_wave} blocks)",
            verdict=f"{w.waves:.0%} of the warp slots used",
            advice=f"{w.per_wave} blocks, or more per SM",
            tag=tag,
            score=2.0 * (1.0 - w.waves),
            line=line,
            kernel=ks.name,
            detail=f"Every SM has a block but the GPU holds {w.per_wave} at once"
            f"{sms_note}: fewer warps in flight than it can hide latency with.",
            data=data,
        )
    if w.waves < 4.0 and w.efficiency < 0.8:
        return Finding(
            kind="waves",
            what="waves",
            value=f"{w.waves:.2f} waves",
            verdict=f"last wave {w.tail / w.per_wave:.0%} full",
            advice="whole waves, or a grid-stride loop",
            tag=tag,
            score=2.0 * (1.0 - w.efficiency),
            line=line,
            kernel=ks.name,
            detail=f"{w.blocks} blocks in waves of {w.per_wave}{sms_note}: the last wave"
            f" has {w.tail} blocks, and the GPU is {w.efficiency:.0%} busy over the run.",
            data=data,
        )
    return Finding(
        kind="waves",
        what="waves",
        value=f"{w.waves:.2f} waves",
        verdict="the tail costs little" if w.tail else "whole waves",
        tag=tag,
        line=line,
        kernel=ks.name,
        detail=f"{w.blocks} blocks in waves of {w.per_wave}{sms_note}.",
        data=data,
    )


# -- the instructions --------------------------------------------------------------------------


def _lines(ks: KernelSource, accesses: list[Access]) -> tuple[int | None, str]:
    kl = sorted({a.line for a in accesses if a.line})
    fl = [ks.file_line(x) for x in kl]
    first = next((x for x in fl if x), None)
    return first, ", ".join(str(x) for x in (fl if all(fl) else kl))


def vector_loads(s: Subject) -> Finding | None:
    """Whether the global loads that vary per thread are 128 bits wide."""
    if s.facts is None:
        return None
    ks = s.ks
    loads = [a for a in s.facts.accesses if a.space in ("global", "generic") and a.kind == "load"]
    varying = [a for a in loads if not (a.addr is not None and a.addr.uniform)]
    if not varying:
        return None
    wide = [a for a in varying if a.width >= 16]
    widths = sorted({a.width * 8 for a in varying})
    line, lines = _lines(ks, varying)
    if wide:
        return Finding(
            kind="vector-loads",
            what="loads",
            value=f"{len(wide)} of {len(varying)} global loads 128-bit",
            verdict="vector loads",
            tag="static",
            line=line,
            kernel=ks.name,
            detail="ld.global.v4 in PTX (LDG.E.128 in SASS).",
            data={"loads": len(varying), "wide": len(wide), "bits": widths},
        )
    if s.triton is not None:
        return _triton_vector_loads(s, varying, widths, lines)
    return Finding(
        kind="vector-loads",
        what="loads",
        value=f"{len(varying)} global load{'s' * (len(varying) > 1)},"
        f" {'/'.join(map(str, widths))}-bit",
        verdict="no 128-bit loads",
        advice="try float4",
        tag="static",
        score=1.2 if s.metric != "TFLOP/s" else 0.4,
        line=line,
        kernel=ks.name,
        detail=(
            "Every global load is narrower than 128 bits (ld.global.v4 in PTX,"
            f" LDG.E.128 in SASS); kernel lines {lines}. A float4 load moves 16"
            " bytes a thread with one instruction: fewer instructions and more bytes"
            " in flight, which can lift a memory-bound kernel toward the copy."
        ),
        data={"loads": len(varying), "wide": 0, "bits": widths},
    )


def _masked(s: Subject, accesses: list[Access]) -> bool:
    """Whether any of `accesses` runs under a predicate (a Triton mask)."""
    fn = s.facts.function if s.facts is not None else None
    return fn is not None and any(fn.insns[a.index].pred for a in accesses)


def _triton_vector_loads(
    s: Subject, varying: list[Access], widths: list[int], lines: str
) -> Finding:
    """vector_loads for a Triton kernel: why Triton could not make its loads 128-bit, from what
    its specialisation on the call's arguments could not assume."""
    assert s.triton is not None
    t, ks = s.triton, s.ks
    line, _ = _lines(ks, varying)
    if t.unaligned:
        verdict = f"{', '.join(t.unaligned)} not 16-byte aligned"
        advice = "pass aligned tensors"
    elif t.indivisible:
        verdict = f"{', '.join(t.indivisible)} not multiples of 16"
        advice = "full blocks without a mask"
    elif _masked(s, varying):
        verdict, advice = "masks known element by element", ""
    else:
        verdict = "no 128-bit loads"
        advice = "tl.multiple_of / tl.max_contiguous"
    args = ", ".join(f"{k} = {v}" for k, v in t.indivisible.items())
    sites = len({a.line for a in varying})  # a tl.load is several instructions, on its line
    return Finding(
        kind="vector-loads",
        what="loads",
        value=f"{sites} tl.load{'s' * (sites > 1)}, {'/'.join(map(str, widths))}-bit",
        verdict=verdict,
        advice=advice,
        tag="static",
        score=1.2 if s.metric != "TFLOP/s" else 0.4,
        line=line,
        kernel=ks.name,
        detail=(
            f"Every global load is narrower than 128 bits (lines {lines}). Triton gives a thread"
            " one 128-bit load for 4 neighbouring elements only when it can prove them"
            " contiguous, 16-byte aligned and under one mask value. Of the call's arguments it"
            " knows only whether each pointer is 16-byte aligned and each integer a multiple"
            " of 16 (it compiles a kernel for each such case)"
            + (f"; pointers not aligned here: {', '.join(t.unaligned)}" if t.unaligned else "")
            + (
                f"; integers not multiples of 16 here: {args}, so a mask or an index built from"
                " them is known only element by element. Loads of full blocks without a mask"
                " (the last block masked apart) or rows of a multiple of 16 let it vectorise"
                if t.indivisible
                else ""
            )
            + (
                "; these loads are masked, and their masks are not provably the same for 4"
                " neighbouring elements (a bound that is no multiple of 16, or one computed per"
                " element)"
                if not t.unaligned and not t.indivisible and _masked(s, varying)
                else ""
            )
            + ". tl.multiple_of and tl.max_contiguous tell it what it cannot prove; they must"
            " be true of every call, or the loads read the wrong elements."
        ),
        data={"loads": len(varying), "wide": 0, "bits": widths},
    )


def barriers(s: Subject) -> Finding | None:
    """Where the block waits for all its warps (bar.sync), and whether inside a loop."""
    facts, ks = s.facts, s.ks
    if facts is None or not facts.barriers:
        return None
    kl = sorted({b.line for b in facts.barriers if b.line})
    in_loops = [b for b in facts.barriers if facts.loop_of(b.index) is not None]
    line = ks.file_line(kl[0]) if kl else None
    sites = f" from {len(kl)} line{'s' * (len(kl) > 1)}" if kl else ""
    return Finding(
        kind="barriers",
        what="barriers",
        value=f"{len(facts.barriers)} bar.sync{sites}",
        verdict=f"{len(in_loops)} inside loops" if in_loops else "none in a loop",
        tag="static",
        line=line or ks.line,
        kernel=ks.name,
        detail=f"Barriers at kernel lines {kl}: every warp of the block waits there.",
        data={"barriers": len(facts.barriers), "in_loops": len(in_loops)},
    )


def global_atomics(s: Subject) -> Finding | None:
    """Global atomics, and whether one sits in the loop that streams the input (one atomic per
    element)."""
    facts, ks = s.facts, s.ks
    if facts is None:
        return None
    atomics = [a for a in facts.accesses if a.kind == "atomic" and a.space in ("global", "generic")]
    shared_atomics = [a for a in facts.accesses if a.kind == "atomic" and a.space == "shared"]
    streaming = []
    for a in atomics:
        lp = facts.loop_of(a.index)
        if lp is None:
            continue
        if any(
            b.kind == "load" and b.space in ("global", "generic") and lp.holds(b.index)
            for b in facts.accesses
        ):
            streaming.append(a)
    data = {"atomics": len(streaming or atomics), "shared_atomics": len(shared_atomics)}
    if streaming:
        line, lines = _lines(ks, streaming)
        return Finding(
            kind="global-atomics",
            what="atomics",
            value=f"L{line or lines} atomic per element",
            verdict="L2 contention",
            advice="privatise in shared",
            tag="static",
            score=3.4,
            line=line,
            kernel=ks.name,
            detail=(
                "A global atomic sits in the loop that reads the input, so every element"
                " costs an atomic in L2, and elements that hit the same address serialise."
                " Accumulate per block in shared memory (shared atomics), then add each"
                " block's result to global memory once."
            ),
            data=data,
        )
    if not atomics:
        return None
    line, lines = _lines(ks, atomics)
    return Finding(
        kind="global-atomics",
        what="atomics",
        value=f"{len(atomics)} global atomic{'s' * (len(atomics) > 1)}",
        verdict="not per element",
        tag="static",
        line=line,
        kernel=ks.name,
        detail=f"Global atomics at kernel lines {lines}, not in a loop over the input.",
        data=data,
    )


def calls(s: Subject) -> Finding | None:
    """Calls the compiler did not inline: their arguments go through the stack."""
    if s.facts is None or not s.facts.calls:
        return None
    return Finding(
        kind="calls",
        what="calls",
        value=f"{len(s.facts.calls)} calls not inlined",
        verdict="call overhead",
        advice="__forceinline__",
        tag="static",
        score=0.8,
        line=s.ks.line,
        kernel=s.ks.name,
        detail=f"PTX calls {sorted(set(s.facts.calls))}: arguments go through the stack.",
    )


# -- the access patterns -----------------------------------------------------------------------

RARE_LINE = 0.25  # of the busiest access: a line that runs less is a rare path, not the suspect


def _weighed(weight: float, why: str, memory: str) -> str:
    """The sentence that says how a finding was weighed by how often its line runs."""
    if weight >= 1.0:
        return ""
    return (
        f" This line runs about {weight:.0%} as often as the kernel's busiest {memory}-memory"
        f" access ({why or 'fewer loop trips'}), from the code's shape: its score is weighed"
        " by that."
    )


def _global_requests(s: Subject) -> list[tuple[Access, access.Pattern, str]]:
    """(access, the warp's pattern, the stride in elements) of each global access with a known
    address. A Triton kernel's thread loads its neighbouring elements of a block with one
    instruction each, all on the line of the tl.load: those whose addresses differ by constants
    are one request together (access.joint_pattern), and the stride is between elements."""
    assert s.facts is not None
    block = s.block
    known = [
        a
        for a in s.facts.accesses
        if a.addr is not None and a.addr.known and a.space in ("global", "generic")
    ]
    if s.triton is None:
        out = []
        for a in known:
            assert a.addr is not None
            p = access.global_pattern(a.addr, a.width, block)
            if p is not None:
                out.append((a, p, access.stride_elements(a.addr, a.width, block)))
        return out
    groups: dict[tuple[Any, ...], list[Access]] = {}
    for a in known:
        assert a.addr is not None
        symbolic = psplit(a.addr.base)[0] if a.addr.base is not None else None
        groups.setdefault((a.line, a.kind, a.width, a.addr[1:], symbolic), []).append(a)
    found = []
    for group in groups.values():
        p = access.joint_pattern([(a.addr, a.width) for a in group if a.addr is not None], block)
        if p is not None:
            found.append((group[0], p, _element_stride(group[0], known, block)))
    return found


def _element_stride(a: Access, known: list[Access], block: tuple[int, ...]) -> str:
    """The step in elements between a Triton thread's neighbouring elements: the smallest
    difference between the addresses of the accesses of `a`'s line that move as `a` does from
    lane to lane, of which every other is a multiple ("1", "3", "cols"); else between lanes."""
    assert a.addr is not None
    diffs = [
        d
        for x in known
        if x.addr is not None
        and (x.line, x.kind, x.width, x.addr[1:]) == (a.line, a.kind, a.width, a.addr[1:])
        and (d := padd(x.addr.base, a.addr.base, -1))
    ]
    for d in sorted(diffs, key=lambda p: sum(abs(c) for _, c in p)):
        if all(_multiple(o, d) for o in diffs) and all(c % a.width == 0 for _, c in d):
            step = tuple((m, abs(c) // a.width) for m, c in d)
            return pformat(step)
    return access.stride_elements(a.addr, a.width, block)


def _multiple(q: Any, p: Any) -> bool:
    """Whether polynomial q is an integer multiple of polynomial p."""
    if {m for m, _ in q} != {m for m, _ in p}:
        return False
    ratios = {c * 1.0 / dict(p)[m] for m, c in q}
    return len(ratios) == 1 and float(next(iter(ratios))).is_integer()


def coalescing(s: Subject) -> list[Finding]:
    """Global accesses whose warp touches more 32-byte sectors than its bytes need, one finding
    per kernel line, under the launch's block shape (or 256 threads)."""
    if s.facts is None:
        return []
    ks, block = s.ks, s.block
    by_kind: dict[tuple[int | None, str], list[tuple[Access, access.Pattern]]] = {}
    strides: dict[int, str] = {}
    for a, p, stride in _global_requests(s):
        if not p.broadcast and p.efficiency < 0.5:
            by_kind.setdefault((a.line, a.kind), []).append((a, p))
            strides[a.index] = stride
    bad: dict[int | None, list[tuple[Access, access.Pattern]]] = {}
    for (kline, _kind), found in by_kind.items():
        bad.setdefault(kline, []).extend(found)
    good_loads = {
        a.line
        for a in s.facts.accesses
        if a.space == "global" and a.kind == "load" and a.addr is not None and a.addr.known
    }
    out = []
    for kline, items in bad.items():
        a, p = min(items, key=lambda t: t[1].efficiency)
        addr = a.addr
        assert addr is not None  # kept above only with a known address
        line = ks.file_line(kline)
        stride = strides[a.index]
        kinds = sorted({x.kind for x, _ in items})
        transposing = kinds == ["store"] and kline in good_loads
        names = {"load": "loads", "store": "stores", "atomic": "atomics"}
        what = "+".join(SHORT[k] for k in kinds) if len(kinds) > 1 else names[kinds[0]]
        runtime = " (a run-time stride)" if p.symbolic else ""
        score = 4.0 * (1.0 - p.efficiency)
        cx = pconst(addr.cx)
        if s.triton is not None:  # the step between a thread's elements, not between lanes
            cx = int(stride) * a.width if stride.lstrip("-").isdigit() else None
        if (cx is not None and abs(cx) <= 8 * a.width) or "<runtime>" in pformat(addr.cx):
            # A short stride whose gaps other accesses may fill from L1, or a stride the
            # analysis only knows as "some run-time value": worth fixing, not the likely cause.
            score = min(score, 2.0)
        weight, why = s.weight([x for x, _ in items], ("global", "generic"))
        score *= weight
        rare = weight < RARE_LINE
        out.append(
            Finding(
                kind="coalescing",
                what="coalesce",
                value=f"L{line or kline} {what} stride {stride}",
                verdict=f"{p.units / p.ideal:.0f}x the sectors" + (", rare path" if rare else ""),
                advice=""
                if rare
                else "contiguous offsets along the block"
                if s.triton is not None
                else "stage in shared mem"
                if transposing
                else "make x contiguous",
                tag=s.access_tag,
                score=score,
                line=line,
                kernel=ks.name,
                detail=(
                    (
                        f"Neighbouring elements of the Triton block are {stride} elements of"
                        f" {a.width} bytes apart{runtime}. A thread reaches several with one"
                        " instruction each; taken together, one warp's instructions of this"
                        f" line touch {p.units} 32-byte sectors where {p.ideal} would hold"
                        f" their bytes: {p.efficiency:.0%} of what they move is used ({a.op};"
                        " lane 0 assumed sector-aligned)."
                        if s.triton is not None
                        else f"Neighbouring threads (threadIdx.x) of a {tuple(block)} block are"
                        f" {stride} elements of {a.width} bytes apart{runtime}, so one warp's"
                        f" access touches {p.units} 32-byte sectors where {p.ideal} would hold"
                        f" its bytes: {p.efficiency:.0%} of each request is used ({a.op}; lane"
                        " 0 assumed sector-aligned). L1 and L2 may serve the rest of a sector"
                        " to another access, but every request moves them."
                    )
                    + _weighed(weight, why, "global")
                ),
                data={
                    "weight": round(weight, 4),
                    "sectors": p.units,
                    "ideal": p.ideal,
                    "efficiency": round(p.efficiency, 4),
                    "stride": stride,
                    "kernel_line": kline,
                    "instructions": len(items),
                    "kinds": kinds,
                },
            )
        )
    return out


def bank_conflicts(s: Subject) -> list[Finding]:
    """Shared accesses whose warp needs more wavefronts than one (lanes in the same bank), one
    finding per kernel line and kind of access."""
    if s.facts is None:
        return []
    ks, block, facts = s.ks, s.block, s.facts
    bad: dict[tuple[int | None, str], list[tuple[Access, access.Pattern]]] = {}
    for a in facts.accesses:
        if a.addr is None or not a.addr.known or a.space != "shared":
            continue
        p = access.shared_pattern(a.addr, a.width, block)
        if p is not None and p.units > p.ideal:
            bad.setdefault((a.line, a.kind), []).append((a, p))
    out = []
    for (kline, kind), items in bad.items():
        a, p = max(items, key=lambda t: t[1].units / t[1].ideal)
        addr = a.addr
        assert addr is not None  # kept above only with a known address
        line = ks.file_line(kline)
        degree = p.units / p.ideal
        words = access.stride_elements(addr, 4, block)
        k = pconst(addr.cx)
        pad = k is not None and (k // 4) % 32 == 0 and k != 0
        what = "stores" if kind == "store" else ("atomics" if kind == "atomic" else "loads")
        in_loop = facts.loop_of(a.index) is not None
        weight, why = s.weight([x for x, _ in items], ("shared",))
        rare = weight < RARE_LINE
        out.append(
            Finding(
                kind="bank-conflicts",
                what="banks",
                value=f"L{line or kline} shared {SHORT[kind]} stride {words}",
                verdict=f"{degree:.0f}-way conflict" + (", rare path" if rare else ""),
                advice="" if rare else "pad rows by 1" if pad else "spread lanes over banks",
                tag=s.access_tag,
                score=(3.0 * (1.0 - 1.0 / degree) + (0.2 if in_loop else 0.0)) * weight,
                line=line,
                kernel=ks.name,
                detail=(
                    f"A warp's {what[:-1]} ({a.op}) needs {p.units} shared-memory wavefronts"
                    f" where {p.ideal} would do: threads {words} 4-byte words apart land in the"
                    f" same bank of 32 (block {tuple(block)})." + _weighed(weight, why, "shared")
                ),
                data={
                    "wavefronts": p.units,
                    "ideal": p.ideal,
                    "kernel_line": kline,
                    "weight": round(weight, 4),
                },
            )
        )
    return out


def shared_bound(s: Subject) -> Finding | None:
    """The innermost loop with FMAs and shared loads: an SM starts 4 warp FMAs a clock per 128
    FP32 lanes but serves one shared wavefront a clock, so the loop's FMAs run at most at
    (FMAs / (lanes/32)) / wavefronts of the FMA peak. Not asked of a kernel graded in GB/s."""
    facts, arch, block = s.facts, s.arch, s.block
    if facts is None or s.metric == "GB/s":
        return None
    best = None
    for lp in facts.loops:
        fmas = [f for f in facts.fmas if facts.loop_of(f.index) is lp]
        lds = [
            a
            for a in facts.accesses
            if a.space == "shared" and a.kind == "load" and facts.loop_of(a.index) is lp
        ]
        if len(fmas) < 4 or not lds:
            continue
        wavefronts = 0
        for a in lds:
            p = access.shared_pattern(a.addr, a.width, block) if a.addr is not None else None
            wavefronts += p.units if p is not None else max(1, a.width // 4)
        fma_clocks = len(fmas) / (arch.fp32_lanes_per_sm / 32)
        cap = min(1.0, fma_clocks / wavefronts) if wavefronts else 1.0
        if best is None or len(fmas) > best[1]:
            best = (lp, len(fmas), len(lds), wavefronts, cap)
    if best is None:
        return None
    lp, nf, nl, wavefronts, cap = best
    if s.metric is None and nf < 8:
        return None
    line = s.ks.file_line(lp.line)
    return Finding(
        kind="shared-bound",
        what="loop",
        value=f"L{line or lp.line}: {nl} LDS/{nf} FMA",
        verdict=f"FMA <= {cap:.0%} of peak",
        advice="more outputs/thread" if cap < 0.6 else "",
        tag=s.access_tag,
        score=3.3 if cap < 0.25 else 1.5 if cap < 0.6 else 0.0,
        line=line,
        kernel=s.ks.name,
        detail=(
            f"The loop at kernel line {lp.line} issues {nf} FMAs and {nl} shared loads"
            f" ({wavefronts} wavefronts) per iteration. An SM does"
            f" {arch.fp32_lanes_per_sm // 32} warp FMAs a clock but serves one shared"
            f" wavefront a clock, so the FMAs run at most {cap:.0%} of the time. Each value"
            " loaded from shared memory should feed several FMAs: compute a small block of"
            " outputs per thread, kept in registers."
        ),
        data={"fmas": nf, "shared_loads": nl, "wavefronts": wavefronts, "cap": round(cap, 4)},
    )


def divergence(s: Subject) -> Finding | None:
    """A branch on the thread's index that splits warps with work on both sides
    (frequency.Split): each such warp runs one side, then the other."""
    w = s.weights
    if w is None or not w.splits:
        return None
    worst = max(w.splits, key=lambda x: x.extra)
    if worst.extra < 0.05:
        return None
    line = s.ks.file_line(worst.line)
    return Finding(
        kind="divergence",
        what="diverge",
        value=f"L{line or worst.line} {worst.split:.0%} of warps split",
        verdict="warps run both paths",
        advice="branch per warp, not per lane",
        tag=s.access_tag,
        score=3.5 * min(1.0, worst.extra),
        line=line,
        kernel=s.ks.name,
        detail=(
            f"The branch at kernel line {worst.line} depends only on the thread's index, and"
            f" {worst.split:.0%} of the warps of a {tuple(s.block)} block have threads on both"
            " sides: such a warp runs one side with the other side's threads idle, then the"
            f" other. From the code's shape that adds about {worst.extra:.0%} to the kernel's"
            " instructions (loops assumed to run 8 times). Let a whole warp take one side:"
            " branch on threadIdx.x / 32, or give each side's work to separate warps."
        ),
        data={"split": round(worst.split, 4), "extra": round(worst.extra, 4)},
    )


def rereads(s: Subject) -> Finding | None:
    """A global load in a loop whose address no trip changes: the same value fetched again on
    every trip (the compiler keeps it only when nothing the loop stores may alias it)."""
    facts = s.facts
    fn = facts.function if facts is not None else None
    if facts is None or fn is None:
        return None
    defs: dict[str, list[int]] = {}
    for insn in fn.insns:
        if insn.operands and insn.operands[0].startswith("%"):
            defs.setdefault(insn.operands[0], []).append(insn.index)
    found = []
    for a in facts.accesses:
        lp = facts.loop_of(a.index)
        insn = fn.insns[a.index]
        if (
            lp is None
            or a.kind != "load"
            or a.space not in ("global", "generic")
            or any(m in insn.parts for m in ("volatile", "relaxed", "acquire"))
        ):
            continue
        operand = next((o for o in insn.operands if o.startswith("[")), "")
        reg = operand.strip("[]").split("+")[0].strip()
        where = defs.get(reg, [])
        if reg.startswith("%") and where and not any(lp.holds(i) for i in where):
            found.append(a)
    if not found:
        return None
    weight, _ = s.weight(found, ("global", "generic"))
    # A value every lane shares (a filter weight) comes back as one broadcast from L1; a value
    # of each lane's own moves the warp's whole request again every trip.
    own = [a for a in found if not (a.addr is not None and a.addr.uniform)]
    found = own or found
    line, lines = _lines(s.ks, found)
    return Finding(
        kind="rereads",
        what="re-read",
        value=f"L{line or lines} same address every trip",
        verdict="a load per trip for one value",
        advice="load it once, before the loop",
        tag="static",
        score=(2.2 if own else 0.9) * weight,
        line=line,
        kernel=s.ks.name,
        detail=(
            f"Kernel lines {lines} load from global memory inside a loop at an address no trip"
            " changes, so every trip fetches the same value again (from L1 at best, at the"
            " latency of a load)"
            + (
                ", a whole request for the warp each time."
                if own
                else "; every lane reads the same one, so each is a single broadcast."
            )
            + " The compiler keeps such a value in a register only when nothing the loop"
            " stores could overwrite it and registers allow: read it into a variable before"
            " the loop, or mark the pointers __restrict__."
        ),
        data={"loads": len(found), "weight": round(weight, 4), "per_lane": bool(own)},
    )


# The static tier's rules, in the order the card lists findings of equal weight.
RULES: list[Rule] = [
    resources,
    spills,
    local_memory,
    occupancy,
    waves,
    vector_loads,
    barriers,
    global_atomics,
    calls,
    coalescing,
    bank_conflicts,
    shared_bound,
    divergence,
    rereads,
]
