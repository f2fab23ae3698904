"""Where a kernel's register pressure peaks: the source line of a spill.

ptxas says how many bytes a kernel spills but not where, and the cubin keeps no trace of it
(the spill code is ptxas's own). The place is where the most values are alive at once: a
liveness analysis over the PTX's virtual registers (live out of a block = live into its
successors, back edges included, to a fixed point), counted in 32-bit registers (a 64-bit value
takes two, predicates none). PTX is not the allocation ptxas makes, which reorders and
rematerialises, but the line where the most values are alive is where it runs out first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpulab.explain import cfg
from gpulab.explain.ptx import Function, Insn

_REG = re.compile(r"%[A-Za-z_]\w*")
_NO_DEST = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence", "prefetch"}


@dataclass(frozen=True)
class Peak:
    """The most 32-bit registers alive at once, and the kernel line of the instruction there."""

    registers: int
    line: int | None


def _size(reg: str) -> int:
    if reg.startswith("%p"):
        return 0
    if reg.startswith(("%rd", "%fd")):
        return 2
    if reg.startswith(("%r", "%f", "%h", "%rs", "%b")):
        return 1
    return 0  # %tid.x, %ctaid.x, ...: special registers, not the thread's


def _uses_defs(insn: Insn) -> tuple[set[str], set[str]]:
    ops = insn.operands
    has_dest = bool(ops) and insn.base not in _NO_DEST and not insn.op.startswith("cp.async")
    defs = set(_REG.findall(ops[0])) if has_dest else set()
    uses = {r for o in (ops[1:] if has_dest else ops) for r in _REG.findall(o)}
    if insn.pred:
        uses.add(insn.pred.lstrip("!"))
    return {u for u in uses if _size(u)}, {d for d in defs if _size(d)}


def peak(fn: Function) -> Peak:
    """The point of the function where the most registers are alive."""
    blocks, _ = cfg.blocks(fn)
    if not blocks:
        return Peak(0, None)
    info = [_uses_defs(insn) for insn in fn.insns]
    gen: list[set[str]] = []
    kill: list[set[str]] = []
    for blk in blocks:
        g: set[str] = set()
        k: set[str] = set()
        for i in range(blk.end - 1, blk.start - 1, -1):
            uses, defs = info[i]
            g = (g - defs) | uses
            k |= defs
        gen.append(g)
        kill.append(k)
    live_in: list[set[str]] = [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks) - 1, -1, -1):
            out: set[str] = set().union(*(live_in[s] for s in blocks[b].succ))
            new = gen[b] | (out - kill[b])
            if new != live_in[b]:
                live_in[b], changed = new, True
    best = Peak(0, None)
    for blk in blocks:
        live: set[str] = set().union(*(live_in[s] for s in blk.succ))
        for i in range(blk.end - 1, blk.start - 1, -1):
            uses, defs = info[i]
            live = (live - defs) | uses
            n = sum(_size(r) for r in live)
            if n > best.registers and fn.insns[i].line is not None:
                best = Peak(n, fn.insns[i].line)
    return best
