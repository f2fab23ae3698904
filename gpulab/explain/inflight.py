"""What a thread keeps in flight, and by Little's law whether an SM's resident warps hold enough.

Occupancy is not a goal: an SM hides latency with work in flight, and warps are one factor of
it, the work each warp has outstanding the other. Little's law says how much is enough:

- memory: the bytes in flight on an SM must equal its share of the bandwidth times the latency
  (`DRAM_LATENCY_NS`, an assumed loaded latency, as lesson 14 works it out). A thread's bytes
  in flight are read from the PTX: the global loads of the busiest path the compiler can issue
  before it must wait for one (a float4 load is 16 bytes, four independent float loads 16 too,
  a load whose address comes from the one before 4; `load_bytes` says what ends a run).
- arithmetic: the FMAs in flight on an SM must equal the FMAs it starts a clock times their
  latency (`FMA_LATENCY_CLOCKS`). A thread's are the independent chains of its busiest FMA loop:
  each accumulator one (a register-tiled matmul's 64, a dot product's 1).

So a register-tiled kernel at 25% occupancy can have all it needs, and one with one scalar load
a thread can be short at 100%. The PTX is not the SASS: ptxas may hoist loads further, which
only adds to what is counted here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpulab.explain.frequency import Weights
from gpulab.explain.ptx import Facts

DRAM_LATENCY_NS = 600.0  # assumed loaded DRAM latency (lesson 14)
FMA_LATENCY_CLOCKS = 4  # FP32 FMA, sm_80 to sm_90
HOT = 0.5  # of the busiest global load's frequency: the loads that make the kernel's traffic
_REG = re.compile(r"%[A-Za-z_]\w*")
_NO_DEST = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence", "prefetch"}


@dataclass
class Flight:
    """What an SM must keep in flight to reach its roof, and what the launch keeps there."""

    unit: str  # "B" (bytes of loads) or "FMA" (warp FMAs)
    per_thread: float  # bytes, or FMA chains
    have: float  # per SM, at the launch's occupancy
    need: float  # per SM, by Little's law
    at_full: float  # per SM, were every warp slot filled

    @property
    def reach(self) -> float:
        """The share of the roof the work in flight can sustain now (at most 1)."""
        return min(1.0, self.have / self.need) if self.need else 1.0

    @property
    def reach_full(self) -> float:
        """The share of the roof the work in flight would sustain with every warp slot filled."""
        return min(1.0, self.at_full / self.need) if self.need else 1.0

    @property
    def loss(self) -> float:
        """The share of what full occupancy would reach that the missing warps cost (0: more
        warps would not help)."""
        full = self.reach_full
        return max(0.0, 1.0 - self.reach / full) if full else 0.0

    def amount(self, x: float) -> str:
        """`x` in this flight's unit, short."""
        if self.unit == "B":
            return f"{x / 1024:.0f} KB" if x >= 1024 else f"{x:.0f} B"
        return f"{x:.0f} FMAs"

    def to_dict(self) -> dict[str, float | str]:
        """The figures as JSON-ready data."""
        return {
            "unit": self.unit,
            "per_thread": self.per_thread,
            "have_per_sm": round(self.have, 1),
            "need_per_sm": round(self.need, 1),
            "at_full_per_sm": round(self.at_full, 1),
        }


def _reads(operands: list[str], has_dest: bool) -> set[str]:
    return {r for o in (operands[1:] if has_dest else operands) for r in _REG.findall(o)}


def load_bytes(facts: Facts, weights: Weights | None) -> int:
    """A thread's bytes of global loads in flight at once on its busiest path: the largest run
    of loads the compiler can issue before it must wait for one (0 without global loads).

    Uses of a loaded value do not end a run (the scheduler puts independent loads first); what
    does is what a load cannot be moved past: a loop's back edge, a barrier, a wait for
    asynchronous copies, a store to global memory or an atomic while a load that may alias it
    is outstanding (a `.nc` load cannot), a branch on a loaded value, and a load whose address
    is computed from one (a pointer chase). Only the loads of the busiest path count."""
    fn = facts.function
    if fn is None:
        return 0
    loads = {
        a.index: a for a in facts.accesses if a.kind == "load" and a.space in ("global", "generic")
    }
    if not loads:
        return 0

    def freq(i: int) -> float:
        return weights.of(i) if weights is not None else 1.0

    top = max(freq(i) for i in loads)
    best = batch = 0
    aliased = False  # an outstanding load a global store may alias
    tainted: set[str] = set()  # registers computed from outstanding loads
    for insn in fn.insns:
        has_dest = insn.base not in _NO_DEST and not insn.op.startswith("cp.async")
        reads = _reads(insn.operands, has_dest) | ({insn.pred.lstrip("!")} if insn.pred else set())
        back = (
            insn.base == "bra"
            and bool(insn.operands)
            and fn.labels.get(insn.operands[0], insn.index + 1) <= insn.index
        )
        writes_global = insn.base in ("st", "atom", "red") and not insn.has("shared")
        chase = insn.index in loads and bool(reads & tainted)
        if (
            back
            or insn.base in ("bar", "barrier")
            or insn.op.startswith(("cp.async.wait", "cp.async.bulk.wait"))
            or (writes_global and aliased)
            or (insn.base == "bra" and bool(reads & tainted))
            or chase
        ):
            best = max(best, batch)
            batch, aliased, tainted = 0, False, set()
        if has_dest and reads & tainted and insn.operands:
            tainted |= set(_REG.findall(insn.operands[0]))
        a = loads.get(insn.index)
        if a is not None:
            if insn.operands and not insn.op.startswith("cp.async"):
                tainted |= set(_REG.findall(insn.operands[0]))
            if freq(insn.index) >= HOT * top:
                batch += a.width
                aliased = aliased or a.cached != "nc"
    return max(best, batch)


def fma_chains(facts: Facts) -> int:
    """Independent FP32 FMA chains a thread runs in its loop with the most FMAs: the FMAs whose
    addend no earlier FMA of the same trip wrote (0 without a loop of FMAs)."""
    fn = facts.function
    if fn is None or not facts.fmas:
        return 0
    best_loop, most = None, 0
    for lp in facts.loops:
        n = sum(1 for f in facts.fmas if facts.loop_of(f.index) is lp)
        if n > most:
            best_loop, most = lp, n
    if best_loop is None:
        return 0
    written: set[str] = set()
    heads = 0
    for f in facts.fmas:
        if facts.loop_of(f.index) is not best_loop or len(f.operands) < 4:
            continue
        if f.operands[3] not in written:
            heads += 1
        written.add(f.operands[0])
    return heads
