"""Findings for one kernel, from its compiled code, its launch and the GPU's shape.

Each rule below turns facts into at most a few findings; explain() (__init__.py) gathers them.
The scores (findings.py) rank the suspects: a 32-way bank conflict or an uncoalesced store
outranks an occupancy of 50%, which outranks scalar loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpulab.explain import access
from gpulab.explain import occupancy as occ
from gpulab.explain.arch import Arch
from gpulab.explain.cubin import Resources
from gpulab.explain.findings import Finding
from gpulab.explain.nvrtc import PtxasInfo
from gpulab.explain.ptx import Access, Facts, pconst, pformat
from gpulab.explain.source import Big, KernelSource


@dataclass
class Launch:
    """The launch a kernel is explained for."""

    block: tuple[int, ...] | None
    grid: tuple[Any, ...] | None  # ints; Big where it grows with the input
    shared_dynamic: int = 0
    source: str = "estimated"  # "measured" (a record of a real launch) or "estimated"
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


SHORT = {"load": "ld", "store": "st", "atomic": "atom"}


def _tag(*sources: str) -> str:
    return "estimated" if "estimated" in sources else "static"


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def resources_findings(
    ks: KernelSource, res: Resources, info: PtxasInfo | None, arch: Arch, facts: Facts | None
) -> list[Finding]:
    """Findings from the compiled resources: registers, spills, local memory and shared memory."""
    out: list[Finding] = []
    max_threads = min(res.max_threads or 1024, occ.max_threads_for_regs(arch, res.registers))
    out.append(
        Finding(
            "resources",
            "resources",
            f"{res.registers} regs, {_kb(res.shared_static)} shared, {res.local_bytes} B local",
            f"up to {max_threads} threads/block",
            "",
            "static",
            0.0,
            ks.line,
            ks.name,
            detail=(
                f"ptxas for {arch.name}: {res.registers} registers a thread,"
                f" {res.shared_static} bytes of static shared memory a block,"
                f" {res.local_bytes} bytes of local memory (stack) a thread; a block may have"
                f" at most {max_threads} threads"
                + (f" (__launch_bounds__ {res.max_threads})" if res.max_threads else "")
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
    )
    spills = (info.spill_stores + info.spill_loads) if info else 0
    local_lines = sorted(
        {a.line for a in (facts.accesses if facts else []) if a.space == "local" and a.line}
    )
    if info is not None and spills:
        capped = res.maxreg is not None and res.maxreg < arch.max_regs_per_thread
        why = f"regs capped at {res.maxreg}" if capped else f"{res.registers} regs not enough"
        advice = "loosen launch bounds" if capped else "fewer live values"
        out.append(
            Finding(
                "spills",
                "spills",
                f"st/ld {info.spill_stores}/{info.spill_loads} B",
                why,
                advice,
                "static",
                3.6,
                ks.line,
                ks.name,
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
                ),
                data={"spill_stores": info.spill_stores, "spill_loads": info.spill_loads},
            )
        )
    elif res.local_bytes or local_lines:
        line = ks.file_line(local_lines[0]) if local_lines else None
        out.append(
            Finding(
                "local-memory",
                "local mem",
                f"{res.local_bytes} B/thread stack",
                "an array in local memory" if local_lines else "a stack frame",
                "constant indices, or shared" if local_lines else "inline the calls",
                "static",
                2.5,
                line or ks.line,
                ks.name,
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
        )
    return out


def occupancy_findings(
    ks: KernelSource,
    res: Resources,
    launch: Launch,
    dev: Device,
    driver_blocks: int | None = None,
    metric: str | None = None,
) -> tuple[list[Finding], occ.Occupancy | None]:
    """Occupancy findings for the launch, and the occupancy they came from (None without a block
    size)."""
    block = launch.threads
    if not block:
        return [], None
    arch = dev.arch
    max_threads = min(res.max_threads or 1024, occ.max_threads_for_regs(arch, res.registers))
    o = occ.compute(
        arch,
        block,
        res.registers,
        res.shared_static,
        launch.shared_dynamic or 0,
        max_threads=max_threads,
    )
    tag = "measured" if driver_blocks is not None else _tag(launch.source)
    if driver_blocks is not None and driver_blocks != o.blocks_per_sm:
        o.limits["driver"] = driver_blocks
        o.blocks_per_sm = driver_blocks
        o.warps_per_sm = driver_blocks * math.ceil(block / arch.warp)
    if o.blocks_per_sm == 0:
        return [
            Finding(
                "launch-fails",
                "launch",
                f"block of {block}",
                "cannot launch",
                f"at most {max_threads} threads/block",
                tag,
                5.0,
                launch.line or ks.line,
                ks.name,
                detail=o.why_none or "no block of this size fits on an SM",
                data=o.to_dict(),
            )
        ], o
    pct = f"{o.fraction:.0%} ({o.warps_per_sm}/{o.max_warps_per_sm} warps)"
    wpb = math.ceil(block / arch.warp)
    src = "a launch the grader recorded" if launch.source == "measured" else "your source"
    detail = (
        f"A block of {block} threads ({wpb} warps, from {src}) on {arch.name}: the SM holds"
        f" {o.blocks_per_sm} blocks; by each rule: "
        + ", ".join(f"{k} {v}" for k, v in o.limits.items())
        + ". Occupancy is resident warps over the SM's maximum."
    )
    if o.fraction >= 1.0:
        return [
            Finding(
                "occupancy",
                "occupancy",
                pct,
                "full",
                "",
                tag,
                0.0,
                launch.line or ks.line,
                ks.name,
                detail=detail,
                data=o.to_dict(),
            )
        ], o
    lim = o.limiter
    if lim == "blocks per SM":
        need = math.ceil(arch.max_warps_per_sm / arch.max_blocks_per_sm) * arch.warp
        verdict = f"{arch.max_blocks_per_sm} blocks/SM cap"
        advice = f"{need}+ threads/block"
    elif lim == "registers":
        verdict = f"{res.registers} regs/thread"
        advice = "fewer live values"
    elif lim == "shared memory":
        used = res.shared_static + (launch.shared_dynamic or 0)
        verdict = f"{_kb(used)} shared/block"
        advice = "less shared/block"
    else:
        verdict = f"{o.blocks_per_sm} blocks of {block} fit"
        advice = f"a block size dividing {arch.max_threads_per_sm}"
    # A compute-bound kernel hides latency with independent instructions as well as warps.
    score = (2.5 if metric == "TFLOP/s" else 4.0) * (1.0 - o.fraction)
    return [
        Finding(
            "occupancy",
            "occupancy",
            pct,
            verdict,
            advice,
            tag,
            score,
            launch.line or ks.line,
            ks.name,
            detail=detail,
            data={**o.to_dict(), "limiter": lim},
        )
    ], o


def wave_findings(
    ks: KernelSource, launch: Launch, o: occ.Occupancy | None, dev: Device
) -> list[Finding]:
    """Findings on how the grid fills the GPU: waves and the tail."""
    blocks = launch.blocks
    if blocks is None or o is None or o.blocks_per_sm == 0:
        return []
    tag = _tag(launch.source, dev.sms_source)
    line = launch.line or ks.line
    if isinstance(blocks, Big):
        return [
            Finding(
                "waves",
                "waves",
                "grid grows with the input",
                "many waves at the timed size",
                "",
                "estimated",
                0.0,
                line,
                ks.name,
                detail="The grid is sized from the input (n / block), so a large input makes"
                " many waves and the last, partial one costs little.",
            )
        ]
    w = occ.Waves(int(blocks), dev.sms * o.blocks_per_sm, dev.sms)
    data = w.to_dict()
    sms_note = f" ({dev.sms} SMs: {dev.name})"
    if w.blocks < dev.sms:
        idle = dev.sms - w.blocks
        return [
            Finding(
                "waves",
                "grid",
                f"{w.blocks} block{'s' * (w.blocks > 1)} for {dev.sms} SMs",
                f"{idle} SMs idle",
                f"use {w.per_wave}+ blocks",
                tag,
                4.0 * idle / dev.sms,
                line,
                ks.name,
                detail=f"A block runs on one SM; {w.blocks} blocks keep {w.blocks} SMs busy"
                f" and leave {idle} idle{sms_note}. The GPU holds {w.per_wave} blocks at once"
                f" ({o.blocks_per_sm} per SM).",
                data=data,
            )
        ]
    if w.waves < 1.0:
        return [
            Finding(
                "waves",
                "grid",
                f"{w.waves:.2f} waves ({w.blocks}/{w.per_wave} blocks)",
                f"{w.waves:.0%} of the warp slots used",
                f"{w.per_wave} blocks, or more per SM",
                tag,
                2.0 * (1.0 - w.waves),
                line,
                ks.name,
                detail=f"Every SM has a block but the GPU holds {w.per_wave} at once"
                f"{sms_note}: fewer warps in flight than it can hide latency with.",
                data=data,
            )
        ]
    if w.waves < 4.0 and w.efficiency < 0.8:
        return [
            Finding(
                "waves",
                "waves",
                f"{w.waves:.2f} waves",
                f"last wave {w.tail / w.per_wave:.0%} full",
                "whole waves, or a grid-stride loop",
                tag,
                2.0 * (1.0 - w.efficiency),
                line,
                ks.name,
                detail=f"{w.blocks} blocks in waves of {w.per_wave}{sms_note}: the last wave"
                f" has {w.tail} blocks, and the GPU is {w.efficiency:.0%} busy over the run.",
                data=data,
            )
        ]
    return [
        Finding(
            "waves",
            "waves",
            f"{w.waves:.2f} waves",
            "the tail costs little" if w.tail else "whole waves",
            "",
            tag,
            0.0,
            line,
            ks.name,
            detail=f"{w.blocks} blocks in waves of {w.per_wave}{sms_note}.",
            data=data,
        )
    ]


def _lines(ks: KernelSource, accesses: list[Access]) -> tuple[int | None, str]:
    kl = sorted({a.line for a in accesses if a.line})
    fl = [ks.file_line(x) for x in kl]
    first = next((x for x in fl if x), None)
    return first, ", ".join(str(x) for x in (fl if all(fl) else kl))


def instruction_findings(
    ks: KernelSource, facts: Facts, metric: str | None, launch: Launch, arch: Arch
) -> list[Finding]:
    """Findings from the PTX: uncoalesced loads, bank conflicts, missed vector loads and the
    like."""
    out: list[Finding] = []
    loads = [a for a in facts.accesses if a.space in ("global", "generic") and a.kind == "load"]
    varying = [a for a in loads if not (a.addr is not None and a.addr.uniform)]
    memory_bound = metric != "TFLOP/s"
    if varying:
        wide = [a for a in varying if a.width >= 16]
        widths = sorted({a.width * 8 for a in varying})
        line, lines = _lines(ks, varying)
        if not wide:
            out.append(
                Finding(
                    "vector-loads",
                    "loads",
                    f"{len(varying)} global load{'s' * (len(varying) > 1)},"
                    f" {'/'.join(map(str, widths))}-bit",
                    "no 128-bit loads",
                    "try float4",
                    "static",
                    1.2 if memory_bound else 0.4,
                    line,
                    ks.name,
                    detail=(
                        "Every global load is narrower than 128 bits (ld.global.v4 in PTX,"
                        f" LDG.E.128 in SASS); kernel lines {lines}. A float4 load moves 16"
                        " bytes a thread with one instruction: fewer instructions and more bytes"
                        " in flight, which can lift a memory-bound kernel toward the copy."
                    ),
                    data={"loads": len(varying), "wide": 0, "bits": widths},
                )
            )
        else:
            out.append(
                Finding(
                    "vector-loads",
                    "loads",
                    f"{len(wide)} of {len(varying)} global loads 128-bit",
                    "vector loads",
                    "",
                    "static",
                    0.0,
                    line,
                    ks.name,
                    detail="ld.global.v4 in PTX (LDG.E.128 in SASS).",
                    data={"loads": len(varying), "wide": len(wide), "bits": widths},
                )
            )
    if facts.barriers:
        kl = sorted({b.line for b in facts.barriers if b.line})
        in_loops = [b for b in facts.barriers if facts.loop_of(b.index) is not None]
        line = ks.file_line(kl[0]) if kl else None
        sites = f" from {len(kl)} line{'s' * (len(kl) > 1)}" if kl else ""
        out.append(
            Finding(
                "barriers",
                "barriers",
                f"{len(facts.barriers)} bar.sync{sites}",
                f"{len(in_loops)} inside loops" if in_loops else "none in a loop",
                "",
                "static",
                0.0,
                line or ks.line,
                ks.name,
                detail=f"Barriers at kernel lines {kl}: every warp of the block waits there.",
                data={"barriers": len(facts.barriers), "in_loops": len(in_loops)},
            )
        )
    # Global atomics in a loop that streams global memory: one atomic per element.
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
    if streaming:
        line, lines = _lines(ks, streaming)
        out.append(
            Finding(
                "global-atomics",
                "atomics",
                f"L{line or lines} atomic per element",
                "L2 contention",
                "privatise in shared",
                "static",
                3.4,
                line,
                ks.name,
                detail=(
                    "A global atomic sits in the loop that reads the input, so every element"
                    " costs an atomic in L2, and elements that hit the same address serialise."
                    " Accumulate per block in shared memory (shared atomics), then add each"
                    " block's result to global memory once."
                ),
                data={"atomics": len(streaming), "shared_atomics": len(shared_atomics)},
            )
        )
    elif atomics:
        line, lines = _lines(ks, atomics)
        out.append(
            Finding(
                "global-atomics",
                "atomics",
                f"{len(atomics)} global atomic{'s' * (len(atomics) > 1)}",
                "not per element",
                "",
                "static",
                0.0,
                line,
                ks.name,
                detail=f"Global atomics at kernel lines {lines}, not in a loop over the input.",
                data={"atomics": len(atomics), "shared_atomics": len(shared_atomics)},
            )
        )
    if facts.calls:
        out.append(
            Finding(
                "calls",
                "calls",
                f"{len(facts.calls)} calls not inlined",
                "call overhead",
                "__forceinline__",
                "static",
                0.8,
                ks.line,
                ks.name,
                detail=f"PTX calls {sorted(set(facts.calls))}: arguments go through the stack.",
            )
        )
    return out


def access_findings(
    ks: KernelSource, facts: Facts, launch: Launch, arch: Arch, metric: str | None
) -> list[Finding]:
    """Coalescing of global accesses, bank conflicts of shared ones, and the shared-memory
    cap of an inner loop's FMAs; under the launch's block shape (or 256 threads)."""
    out: list[Finding] = []
    block = launch.block or (256,)
    tag = "static" if launch.source == "measured" else "estimated"
    bad_global: dict[tuple[int | None, str], list[tuple[Access, access.Pattern]]] = {}
    bad_shared: dict[tuple[int | None, str], list[tuple[Access, access.Pattern]]] = {}
    for a in facts.accesses:
        if a.addr is None or not a.addr.known:
            continue
        if a.space in ("global", "generic"):
            p = access.global_pattern(a.addr, a.width, block)
            if p is not None and not p.broadcast and p.efficiency < 0.5:
                bad_global.setdefault((a.line, a.kind), []).append((a, p))
        elif a.space == "shared":
            p = access.shared_pattern(a.addr, a.width, block)
            if p is not None and p.units > p.ideal:
                bad_shared.setdefault((a.line, a.kind), []).append((a, p))
    good_loads = {
        a.line
        for a in facts.accesses
        if a.space == "global" and a.kind == "load" and a.addr is not None and a.addr.known
    }
    by_line: dict[int | None, list[tuple[Access, access.Pattern]]] = {}
    for (kline, _kind), items in bad_global.items():
        by_line.setdefault(kline, []).extend(items)
    for kline, items in by_line.items():
        a, p = min(items, key=lambda t: t[1].efficiency)
        line = ks.file_line(kline)
        stride = access.stride_elements(a.addr, a.width, block)  # type: ignore[arg-type]
        kinds = sorted({x.kind for x, _ in items})
        transposing = kinds == ["store"] and kline in good_loads
        names = {"load": "loads", "store": "stores", "atomic": "atomics"}
        what = "+".join(SHORT[k] for k in kinds) if len(kinds) > 1 else names[kinds[0]]
        advice = "stage in shared mem" if transposing else "make x contiguous"
        runtime = " (a run-time stride)" if p.symbolic else ""
        score = 4.0 * (1.0 - p.efficiency)
        cx = pconst(a.addr.cx) if a.addr is not None else None
        opaque = a.addr is not None and "<runtime>" in pformat(a.addr.cx)
        if (cx is not None and abs(cx) <= 8 * a.width) or opaque:
            # A short stride whose gaps other accesses may fill from L1, or a stride the
            # analysis only knows as "some run-time value": worth fixing, not the likely cause.
            score = min(score, 2.0)
        out.append(
            Finding(
                "coalescing",
                "coalesce",
                f"L{line or kline} {what} stride {stride}",
                f"{p.units / p.ideal:.0f}x the sectors",
                advice,
                tag,
                score,
                line,
                ks.name,
                detail=(
                    f"Neighbouring threads (threadIdx.x) of a {tuple(block)} block are"
                    f" {stride} elements of {a.width} bytes apart{runtime}, so one warp's"
                    f" access touches {p.units} 32-byte sectors where {p.ideal} would hold"
                    f" its bytes: {p.efficiency:.0%} of each request is used ({a.op}; lane 0"
                    " assumed sector-aligned). L1 and L2 may serve the rest of a sector to"
                    " another access, but every request moves them."
                ),
                data={
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
    for (kline, kind), items in bad_shared.items():
        a, p = max(items, key=lambda t: t[1].units / t[1].ideal)
        line = ks.file_line(kline)
        degree = p.units / p.ideal
        words = access.stride_elements(a.addr, 4, block)  # type: ignore[arg-type]
        k = pconst(a.addr.cx) if a.addr is not None else None
        pad = k is not None and (k // 4) % 32 == 0 and k != 0
        what = "stores" if kind == "store" else ("atomics" if kind == "atomic" else "loads")
        in_loop = facts.loop_of(a.index) is not None
        out.append(
            Finding(
                "bank-conflicts",
                "banks",
                f"L{line or kline} shared {SHORT[kind]} stride {words}",
                f"{degree:.0f}-way conflict",
                "pad rows by 1" if pad else "spread lanes over banks",
                tag,
                3.0 * (1.0 - 1.0 / degree) + (0.2 if in_loop else 0.0),
                line,
                ks.name,
                detail=(
                    f"A warp's {what[:-1]} ({a.op}) needs {p.units} shared-memory wavefronts"
                    f" where {p.ideal} would do: threads {words} 4-byte words apart land in the"
                    f" same bank of 32 (block {tuple(block)})."
                ),
                data={"wavefronts": p.units, "ideal": p.ideal, "kernel_line": kline},
            )
        )
    out += _shared_cap(ks, facts, block, arch, metric, tag)
    return out


def _shared_cap(
    ks: KernelSource,
    facts: Facts,
    block: tuple[int, ...],
    arch: Arch,
    metric: str | None,
    tag: str,
) -> list[Finding]:
    """The innermost loop with FMAs and shared loads: an SM starts 4 warp FMAs a clock per 128
    FP32 lanes but serves one shared wavefront a clock, so the loop's FMAs run at most at
    (FMAs / (lanes/32)) / wavefronts of the FMA peak."""
    if metric == "GB/s":
        return []
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
        waves = 0
        for a in lds:
            p = access.shared_pattern(a.addr, a.width, block) if a.addr is not None else None
            waves += p.units if p is not None else max(1, a.width // 4)
        fma_clocks = len(fmas) / (arch.fp32_lanes_per_sm / 32)
        cap = min(1.0, fma_clocks / waves) if waves else 1.0
        if best is None or len(fmas) > best[1]:
            best = (lp, len(fmas), len(lds), waves, cap)
    if best is None:
        return []
    lp, nf, nl, waves, cap = best
    if metric is None and nf < 8:
        return []
    line = ks.file_line(lp.line)
    score = 3.3 if cap < 0.25 else 1.5 if cap < 0.6 else 0.0
    return [
        Finding(
            "shared-bound",
            "loop",
            f"L{line or lp.line}: {nl} LDS/{nf} FMA",
            f"FMA <= {cap:.0%} of peak",
            "more outputs/thread" if cap < 0.6 else "",
            tag,
            score,
            line,
            ks.name,
            detail=(
                f"The loop at kernel line {lp.line} issues {nf} FMAs and {nl} shared loads"
                f" ({waves} wavefronts) per iteration. An SM does"
                f" {arch.fp32_lanes_per_sm // 32} warp FMAs a clock but serves one shared"
                f" wavefront a clock, so the FMAs run at most {cap:.0%} of the time. Each value"
                " loaded from shared memory should feed several FMAs: compute a small block of"
                " outputs per thread, kept in registers."
            ),
            data={"fmas": nf, "shared_loads": nl, "wavefronts": waves, "cap": round(cap, 4)},
        )
    ]


__all__ = ["Device", "Launch", "pformat"]
