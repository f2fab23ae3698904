"""Whether a kernel's threads can read a value another thread put in shared memory, read from
its PTX: the GPU's counterpart of the emulator's run-time count (`Ran.shared_shares`).

The answer is False ("shares nothing") only when that is certain from the code:

- the kernel (and, where it calls one, every device function of its module) has no shared load
  at all; or
- every shared access, load or store, is a plain `ld`/`st` of the CTA's own shared memory through
  one and the same address operand (`[%rd9]`, `[%rd9+8]`): one virtual register, assigned by one
  unpredicated instruction, one offset, and each load comes after an unpredicated store to it
  as wide as the load, on every path through the function (the store dominates the load). Then
  each thread reads back the slot it last wrote itself.

One operand and one offset for everything, not merely "each load matches some store": a stencil
whose halo threads store `[%rd9+0]` and `[%rd9+8]` and whose loads use the same operands reads
its neighbours' values through them (thread t's `+8` is thread t+2's `+0`), and a tile that one
row of threads fills (`if (ty == 0) s[tx] = ...`) is read by the others through the same
register: the store must dominate the load. What stays out of reach: two threads whose one
register holds the same address (their stores race; correct code does not read such a slot),
and an own-slot read written in several places (offsets, registers): given the benefit of the
doubt.

Anything the reading cannot follow says True, never a rejection on a guess: shared atomics and
reductions, `ldmatrix`, `cp.async` and the other asynchronous or matrix operations, a generic
address that may reach shared memory (`cvta` to or from shared, `generic()`, `isspacep`),
distributed shared memory (`shared::cluster`, `mapa`), a load through a symbol or constant
address (a value one thread put there for all), a register assigned more than once or in an
inner scope, an indirect branch. None when the PTX holds no such kernel.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gpulab.core.ptx_text import Function, Insn, parse

# Opcode parts a plain shared ld/st may carry besides its type: anything else (a cache hint,
# `shared::cluster`, `async`) is an access this reading does not follow.
_PLAIN = frozenset(
    {"ld", "st", "shared", "shared::cta", "volatile", "relaxed", "weak", "acquire", "release"}
    | {"cta", "v2", "v4", "v8"}
)
_TYPE = re.compile(r"([bsuf])(8|16|32|64|128)|bf16|f16x2|bf16x2|pred")
# Operations that read or write shared memory, or reach it, in ways an address operand does not
# show: any of them means the threads may share.
_OPAQUE = re.compile(
    r"^(?:atom|red|ldmatrix|stmatrix|movmatrix|cp|wgmma|tcgen05|mapa|isspacep|mbarrier|brx"
    r"|multimem|tensormap|clusterlaunchcontrol)\b|\.shared\b|shared::"
)
# Instructions whose first operand is no register they assign.
_NO_DEST = frozenset(
    {"st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence", "prefetch"}
    | {"prefetchu", "call", "trap", "brkpt", "cp", "mbarrier", "pmevent", "nanosleep", "stmatrix"}
)
_REGISTER = re.compile(r"%[A-Za-z_$][\w$]*")


@dataclass(frozen=True)
class _Access:
    load: bool
    index: int  # of the instruction in its function
    base: str
    offset: int
    width: int
    predicated: bool


def shares(ptx: str, kernel: str) -> bool | None:
    """Whether a thread of the entry whose (possibly mangled) name holds `kernel` can read a
    shared value another thread wrote (see the module doc); None where no such entry is read.
    Cached by the PTX's text: a check's every call reads it once."""
    return _shares(ptx, kernel)


@functools.lru_cache(maxsize=128)
def _shares(ptx: str, kernel: str) -> bool | None:
    functions = list(parse(ptx).values())
    entry = next((f for f in functions if f.entry and kernel in f.name), None)
    if entry is None:
        return None
    scope = [entry]
    if any(i.op.split(".")[0] == "call" for i in entry.insns):
        scope += [f for f in functions if not f.entry]  # its device functions, kept apart
    accesses: dict[str, list[_Access]] = {}
    for fn in scope:
        found = _shared_accesses(fn)
        if found is None:
            return True
        if found:
            accesses[fn.name] = found
    if not any(a.load for found in accesses.values() for a in found):
        return False
    if len(accesses) != 1:
        return True  # shared memory touched in several functions: operands there differ
    name, found = next(iter(accesses.items()))
    fn = next(f for f in scope if f.name == name)
    return not _own_slot_only(fn, found)


def _shared_accesses(fn: Function) -> list[_Access] | None:
    """The plain shared loads and stores of a function; None when it holds an operation that
    may reach shared memory some other way."""
    out: list[_Access] = []
    for k, insn in enumerate(fn.insns):
        parts = insn.op.split(".")
        plain_shared = parts[0] in ("ld", "st") and ("shared" in parts or "shared::cta" in parts)
        if plain_shared:
            mods = [p for p in parts if not _TYPE.fullmatch(p)]
            if not set(mods) <= _PLAIN:
                return None
            address = insn.operands[1] if parts[0] == "ld" else insn.operands[0]
            base, offset = _address(address)
            if base is None:
                return None
            out.append(_Access(parts[0] == "ld", k, base, offset, _width(parts), bool(insn.pred)))
        elif _OPAQUE.search(insn.op) or any("generic(" in o for o in insn.operands):
            return None
    return out


def _own_slot_only(fn: Function, accesses: list[_Access]) -> bool:
    """Whether every access goes through one operand of one register assigned once, and every
    load is dominated by a store at least as wide: each thread reads back its own slot."""
    if len({(a.base, a.offset) for a in accesses}) != 1:
        return False
    base = accesses[0].base
    if any(base == r or (base.startswith(r) and base[len(r) :].isdigit()) for r in fn.inner):
        return False  # an inner scope may declare a register of that name
    if not base.startswith("%"):
        return False  # a symbol or a constant address: one slot for every thread
    defs = [k for k, i in enumerate(fn.insns) if _assigns(i, base)]
    if len(defs) != 1 or fn.insns[defs[0]].pred:
        return False
    blocks, dominators = _dominators(fn)
    if blocks is None:
        return False

    def before(a: int, b: int) -> bool:  # instruction a runs before b on every path to b
        ba, bb = blocks[a], blocks[b]
        return a < b if ba == bb else ba in dominators[bb]

    stores = [a for a in accesses if not a.load and not a.predicated]
    if not all(before(defs[0], s.index) for s in stores):
        return False
    return all(
        any(before(s.index, a.index) and s.width >= a.width for s in stores)
        for a in accesses
        if a.load
    )


def _assigns(insn: Insn, register: str) -> bool:
    if not insn.operands or insn.op.split(".")[0] in _NO_DEST:
        return False
    first = insn.operands[0]
    if first.startswith("["):
        return False
    return register in _REGISTER.findall(first)


def _address(operand: str) -> tuple[str | None, int]:
    """`[%rd5+16]` -> ("%rd5", 16), `[%rd2+-12]` -> ("%rd2", -12), `[tile]` -> ("tile", 0);
    (None, 0) for what is no address this reading knows."""
    m = re.fullmatch(r"\[\s*([%\w$.]+)\s*(?:\+\s*(-?(?:0x[0-9a-fA-F]+|\d+)))?\s*\]", operand)
    if not m:
        return None, 0
    return m.group(1), int(m.group(2), 0) if m.group(2) else 0


def _width(parts: list[str]) -> int:
    vec, size = 1, 4
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1])
        m = _TYPE.fullmatch(p)
        if m:
            size = 4 if p.endswith("x2") else 2 if p == "bf16" else 1 if p == "pred" else 0
            size = size or int(m.group(2)) // 8
    return vec * size


def _dominators(fn: Function) -> tuple[list[int] | None, list[set[int]]]:
    """The basic block of each instruction and each block's dominators; (None, []) when a branch
    goes where the reading cannot follow."""
    n = len(fn.insns)
    leaders = {0, *fn.labels.values()}
    for k, insn in enumerate(fn.insns):
        if insn.op.split(".")[0] in ("bra", "ret", "exit"):
            leaders.add(k + 1)
    starts = sorted(x for x in leaders if x < n)
    block_of: list[int] = []
    for b, start in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else n
        block_of += [b] * (end - start)
    succ: list[set[int]] = [set() for _ in starts]
    for b, start in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else n
        last = fn.insns[end - 1] if end > start else None
        head = last.op.split(".")[0] if last is not None else ""
        if head == "bra":
            target = fn.labels.get(last.operands[0] if last and last.operands else "")
            if target is None:
                return None, []
            if target < n:
                succ[b].add(block_of[target])
        if (head not in ("bra", "ret", "exit") or (last and last.pred)) and end < n:
            succ[b].add(block_of[end])
    preds: list[set[int]] = [set() for _ in starts]
    for b, targets in enumerate(succ):
        for t in targets:
            preds[t].add(b)
    every = set(range(len(starts)))
    dom = [{0}] + [set(every) for _ in starts[1:]]
    changed = True
    while changed:
        changed = False
        for b in range(1, len(starts)):
            new = {b} | (set.intersection(*(dom[p] for p in preds[b])) if preds[b] else every)
            if new != dom[b]:
                dom[b], changed = new, True
    return block_of, dom
