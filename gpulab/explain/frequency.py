"""How often each PTX instruction runs, against the kernel's busiest: the weight a static
finding takes from the line it sits on.

A strided access on a path that runs once a call costs nothing, the same access in the main loop
costs the kernel its speed; without a profiler the only guide is the code's shape. The function
is cut into basic blocks, and a block's frequency is worked out from its predecessors in text
order (NVRTC lays blocks out so that every edge but a loop's back edge goes forward):

- a loop's header runs `TRIP` times its entry (the PTX rarely says a trip count), and an edge
  that leaves the loop carries `1 / TRIP` of the block it leaves;
- a branch on nothing but the thread's index and constants (`if (threadIdx.x < 3)`,
  `if (lane == 0)`) sends each side the share of the block's threads that take it, under the
  launch's block shape: a memory access made by few threads moves few bytes;
- where one side of a branch moves an array with 128-bit accesses and the other moves it with
  narrower ones (the tail or misaligned path a vectorised kernel keeps beside its fast path),
  the narrow side gets `RARE`; a loop of narrow accesses after a loop that moves the same array
  with 128-bit ones (a remainder loop) runs `RARE` times its entry instead of `TRIP`;
- any other branch is taken by as many as reach it (both sides get the whole), so a guess never
  hides a line that may be hot: only positive evidence that a line is rare lowers its weight.
  A block runs as often as its predecessors send it, and no more often than its immediate
  dominator (the block every path to it passes), which is where the two sides of a branch
  meet again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gpulab.explain import cfg
from gpulab.explain.access import lane_ids
from gpulab.explain.cfg import Block
from gpulab.explain.ptx import Access, Facts, Function, Insn

TRIP = 8.0  # an assumed trip count for a loop whose count the PTX does not give
RARE = 1.0 / 32  # a narrow path beside a 128-bit one: the edges of the array, once a call
WIDE = 8  # bytes a thread: a 64- or 128-bit access is the vector path


@dataclass
class Weights:
    """Each instruction's estimated runs, relative to an entry of the kernel (1.0), and why a
    block runs less than its predecessors."""

    blocks: list[Block]
    freq: list[float]  # per block
    reasons: dict[int, str]  # block -> why it is rare
    of_insn: list[int]  # instruction -> block
    splits: list[Split] = field(default_factory=list)  # divergent branches

    def of(self, index: int) -> float:
        """How often instruction `index` runs, against one run of the kernel's entry."""
        if not self.of_insn or not 0 <= index < len(self.of_insn):
            return 1.0
        return self.freq[self.of_insn[index]]

    def reason(self, index: int) -> str:
        """Why instruction `index` runs rarely, or ""."""
        if not self.of_insn or not 0 <= index < len(self.of_insn):
            return ""
        return self.reasons.get(self.of_insn[index], "")

    def relative(self, index: int, among: Iterable[int]) -> float:
        """How often `index` runs against the busiest of the instructions `among` (1.0 for the
        busiest; 1.0 when nothing is known)."""
        top = max((self.of(i) for i in among), default=0.0)
        return min(1.0, self.of(index) / top) if top > 0 else 1.0


def _origins(fn: Function, names: dict[str, str]) -> dict[str, set[str]]:
    """For each register, the arrays it is computed from: 64-bit kernel parameters (pointers, by
    their C names) and shared arrays (by their PTX names). An address's array is known so even
    where the dataflow lost its exact form (a pointer advanced in a loop)."""
    out: dict[str, set[str]] = {}
    flows = ("mov", "cvta", "add", "sub", "mad", "cvt", "selp")
    for _ in range(8):
        changed = False
        for insn in fn.insns:
            ops = insn.operands
            if not ops or not ops[0].startswith("%"):
                continue
            if insn.base == "ld" and insn.has("param") and insn.parts[-1] in ("u64", "b64", "s64"):
                got = {names.get(ops[1].strip("[]"), "")} - {""} if len(ops) > 1 else set()
            elif insn.base in ("mov", "cvta") and len(ops) == 2 and ops[1] in fn.shared:
                got = {ops[1]}  # a shared array, by its PTX name
            elif insn.base in flows:
                got = set().union(*(out.get(o, set()) for o in ops[1:]))
            else:
                continue
            if not got <= out.get(ops[0], set()):
                out[ops[0]] = out.get(ops[0], set()) | got
                changed = True
        if not changed:
            break
    return out


def _array(a: Access, fn: Function, origins: dict[str, set[str]]) -> str | None:
    """The pointer parameter an access's address comes from, when there is exactly one."""
    insn = fn.insns[a.index]
    operand = next((o for o in insn.operands if o.startswith("[")), "")
    reg = operand.strip("[]").split("+")[0].strip()
    found = origins.get(reg, set())
    return next(iter(found)) if len(found) == 1 else None


def _moves(accesses: list[Access], arrays: dict[int, str | None]) -> dict[tuple, int]:
    """What a region's accesses move: (kind, space, array) -> the widest access's bytes."""
    out: dict[tuple, int] = {}
    for a in accesses:
        if a.space in ("local", "const", "param"):
            continue
        key = (a.kind, "global" if a.space == "generic" else a.space, arrays.get(a.index))
        out[key] = max(out.get(key, 0), a.width)
    return out


def _narrow_twin(mine: dict[tuple, int], other: dict[tuple, int]) -> bool:
    """True when a region moves narrower what the other region moves 64 or 128 bits at a time,
    and nothing wider (an array the dataflow could not name matches any)."""

    def same(x: tuple, y: tuple) -> bool:
        return x[:2] == y[:2] and (x[2] is None or y[2] is None or x[2] == y[2])

    pairs = [(w, ow) for k, w in mine.items() for ok, ow in other.items() if same(k, ok)]
    return any(w < ow and ow >= WIDE for w, ow in pairs) and not any(w > ow for w, ow in pairs)


_INT_OPS: dict[str, Callable[[int, int], int | None]] = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "shl": lambda x, y: x << y, "shr": lambda x, y: x >> y, "and": lambda x, y: x & y,
    "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y, "min": min, "max": max,
    "div": lambda x, y: int(x / y) if y else None, "rem": lambda x, y: x % y if y else None,
}  # fmt: skip
_CMP: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
    "lo": lambda x, y: x < y, "le": lambda x, y: x <= y, "ls": lambda x, y: x <= y,
    "gt": lambda x, y: x > y, "hi": lambda x, y: x > y, "ge": lambda x, y: x >= y,
    "hs": lambda x, y: x >= y,
}  # fmt: skip


Column = list[int]  # one value a thread of the block, in the order of access.lane_ids
_IMMEDIATE = re.compile(r"-?(0[xX][0-9a-fA-F]+|\d+)[uU]?")


class _ThreadEval:
    """A branch predicate worked out for every thread of the block at once, where it depends on
    nothing but the thread's index and constants (`lane == 0`, `warp == 0`, `t < 3`): each
    register's one definition is followed back, a column of values a register, each column
    computed once; a parameter, a load or a register defined twice (a loop's) makes it unknown."""

    def __init__(self, fn: Function, block: tuple[int, ...]) -> None:
        self.fn = fn
        threads = math.prod(block) if block else 1
        lanes = lane_ids(block, threads)
        self.tids = {f"%tid.{x}": [t[i] for t in lanes] for i, x in enumerate("xyz")}
        self.dims = {f"%ntid.{x}": (block[i] if i < len(block) else 1) for i, x in enumerate("xyz")}
        self.threads = threads
        self.defs: dict[str, list[int]] = {}
        for insn in fn.insns:
            if insn.operands and insn.base not in ("st", "bra", "bar", "red", "ret", "exit"):
                for reg in insn.operands[0].split("|"):
                    self.defs.setdefault(reg.strip(), []).append(insn.index)
        self.known: dict[str, Column | None] = {}

    def column(self, text: str, depth: int = 0) -> Column | None:
        """Operand `text`'s value in every thread, or None when it is not a function of the
        thread's index alone."""
        t = text.strip()
        negate = t.startswith("!")
        t = t.lstrip("!")
        out: Column | None
        if t in self.tids:
            out = self.tids[t]
        elif t in self.dims:
            out = [self.dims[t]] * self.threads
        elif _IMMEDIATE.fullmatch(t):
            out = [int(t.rstrip("uU"), 0)] * self.threads
        elif t in self.known:
            out = self.known[t]
        elif t.startswith("%") and depth < 24 and len(self.defs.get(t, [])) == 1:
            out = self._insn(self.fn.insns[self.defs[t][0]], depth + 1)
            self.known[t] = out
        else:
            return None
        if negate and out is not None:
            out = [int(not v) for v in out]
        return out

    def _insn(self, insn: Insn, depth: int) -> Column | None:
        base, ops = insn.base, insn.operands
        if insn.pred:
            return None
        args: list[Column] = []
        for o in ops[1:]:
            col = self.column(o, depth)
            if col is None:
                return None
            args.append(col)
        rows = list(zip(*args, strict=True))
        try:
            if base in ("mov", "cvt") and len(args) == 1:
                return args[0]
            if base == "not" and len(args) == 1:
                return [int(not v) if insn.has("pred") else ~v for v in args[0]]
            if base == "neg" and len(args) == 1:
                return [-v for v in args[0]]
            if base == "mad" and len(args) == 3:
                return [x * y + z for x, y, z in rows]
            if base == "selp" and len(args) == 3:
                return [x if p else y for x, y, p in rows]
            if base == "setp" and len(args) == 2 and len(insn.parts) > 1:
                cmp = _CMP.get(insn.parts[1])
                return None if cmp is None else [int(cmp(x, y)) for x, y in rows]
            op = _INT_OPS.get(base)
            if op is not None and len(args) == 2:
                out = [op(x, y) for x, y in rows]
                return None if any(v is None for v in out) else [int(v or 0) for v in out]
        except (ValueError, OverflowError):  # a shift by a negative count: not a guard of ours
            return None
        return None


@dataclass(frozen=True)
class Shares:
    """How a branch on the thread's index splits a block: the share of its threads that take
    it, of those that fall through, and of its warps that have threads on both sides."""

    taken: float
    falls: float
    split: float


def _thread_shares(fn: Function, index: int, evaluator: _ThreadEval) -> Shares | None:
    """For `@p bra` at `index` where p depends on nothing but the thread's index, how it splits
    the block; None for any other branch."""
    insn = fn.insns[index]
    if not insn.pred:
        return None
    col = evaluator.column(insn.pred)
    if col is None:
        return None
    threads = len(col)
    taken = sum(1 for v in col if v)
    sides: dict[int, set[bool]] = {}
    for t, v in enumerate(col):
        sides.setdefault(t // 32, set()).add(bool(v))
    split = sum(1 for s in sides.values() if len(s) == 2) / max(1, len(sides))
    return Shares(taken / threads, (threads - taken) / threads, split)


@dataclass(frozen=True)
class Split:
    """A branch on the thread's index whose two sides both hold work: a warp with threads on
    both runs one side, then the other."""

    index: int  # the branch instruction
    line: int | None  # its kernel line
    split: float  # the share of warps with threads on both sides
    extra: float  # the extra issue time it costs, against the whole kernel's (estimated)


def weights(fn: Function, facts: Facts, block: tuple[int, ...] = (256,)) -> Weights:
    """Each instruction's estimated frequency (see the module's doc) under a launch of `block`."""
    blocks, of_insn = cfg.blocks(fn)
    if not blocks:
        return Weights([], [], {}, [])
    preds = cfg.predecessors(blocks)
    origins = _origins(fn, facts.dataflow.names if facts.dataflow else {})
    arrays = {a.index: _array(a, fn, origins) for a in facts.accesses}
    in_block: list[list[Access]] = [[] for _ in blocks]
    for a in facts.accesses:
        in_block[of_insn[a.index]].append(a)
    idom, under = cfg.dominators(blocks, preds)
    evaluator = _ThreadEval(fn, block)
    reasons: dict[int, str] = {}
    rare_edges: dict[tuple[int, int], float] = {}
    why: dict[tuple[int, int], str] = {}
    splits: list[tuple[int, list[int], Shares]] = []

    def region(b: int) -> dict[tuple, int]:
        return _moves([a for x in under[b] for a in in_block[x]], arrays)

    for b, blk in enumerate(blocks):
        fwd = [s for s in blk.succ if s > b]
        if len(fwd) != 2 or fwd[0] == fwd[1]:
            continue
        arms = [s for s in fwd if [p for p in preds[s] if p < s] == [b]]
        shares = _thread_shares(fn, blk.end - 1, evaluator)
        if shares is not None:
            target = of_insn[fn.labels.get(fn.insns[blk.end - 1].operands[0], 0)]
            for s, share in ((target, shares.taken), (b + 1, shares.falls)):
                if share < 1.0:
                    rare_edges[(b, s)] = share
                    why[(b, s)] = f"run by {share:.1%} of the block's threads"
            if shares.split and len(arms) == 2:
                splits.append((b, arms, shares))
            continue
        if len(arms) != 2:
            continue
        moved = [region(s) for s in arms]
        for mine, other, s in ((moved[0], moved[1], arms[0]), (moved[1], moved[0], arms[1])):
            if _narrow_twin(mine, other):
                rare_edges[(b, s)] = RARE
                why[(b, s)] = "a narrow path beside a 128-bit one (the array's edges)"
    ends: dict[int, int] = {}
    for lp in facts.loops:  # one loop per header, however many back edges reach it
        ends[lp.start] = max(lp.end, ends.get(lp.start, lp.end))
    loops = sorted(ends.items())
    headers = {of_insn[s] for s, _ in loops if s < len(of_insn)}
    tails = _tail_loops(loops, facts.accesses, arrays, of_insn)
    freq = [0.0] * len(blocks)
    for b in range(len(blocks)):
        incoming = [p for p in preds[b] if p < b]
        if b == 0 or not incoming:
            f = 1.0
        else:
            f = 0.0
            for p in incoming:
                share = rare_edges.get((p, b), 1.0)
                exits = sum(
                    1
                    for s, e in loops
                    if s <= blocks[p].start <= e and not s <= blocks[b].start <= e
                )
                f += freq[p] * share / TRIP**exits
            d = idom[b]
            if d is not None:  # a join runs no more often than the block that leads to it
                f = min(f, freq[d])
                rarer = f < freq[d] * (1.0 - 1e-9)
                reason = next((why[(p, b)] for p in incoming if (p, b) in why), "")
                reasons[b] = reason if rarer and reason else reasons.get(d, "")
        if b in headers:
            if b in tails:
                f *= RARE
                reasons[b] = "a remainder loop after a 128-bit loop"
            else:
                f *= TRIP
        freq[b] = f
    return Weights(blocks, freq, reasons, of_insn, _splits(fn, blocks, freq, under, splits))


def _splits(
    fn: Function,
    blocks: list[Block],
    freq: list[float],
    under: list[set[int]],
    found: list[tuple[int, list[int], Shares]],
) -> list[Split]:
    """The extra time of each divergent branch: a split warp runs both sides, so it pays the
    cheaper side on top of the other (each side's cost per warp that enters it)."""
    total = sum(freq[b] * (blk.end - blk.start) for b, blk in enumerate(blocks)) or 1.0
    out = []
    for b, arms, shares in found:
        cost = []
        for s in arms:
            entered = freq[s] or 1.0
            cost.append(
                sum(freq[x] * (blocks[x].end - blocks[x].start) for x in under[s])
                / entered
                * freq[b]
            )
        branch = blocks[b].end - 1
        extra = shares.split * min(cost) / total
        out.append(Split(branch, fn.insns[branch].line, shares.split, extra))
    return out


def _tail_loops(
    loops: list[tuple[int, int]],
    accesses: list[Access],
    arrays: dict[int, str | None],
    of_insn: list[int],
) -> set[int]:
    """Header blocks of loops that move narrow what an earlier, separate loop moves wide."""
    out: set[int] = set()
    for i, (s, e) in enumerate(loops):
        mine = _moves([a for a in accesses if s <= a.index <= e], arrays)
        for j, (s2, e2) in enumerate(loops):
            if j == i or not e2 < s:
                continue
            if _narrow_twin(mine, _moves([a for a in accesses if s2 <= a.index <= e2], arrays)):
                out.add(of_insn[s])
    return out
