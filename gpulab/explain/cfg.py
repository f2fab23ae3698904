"""A PTX function's control flow: its basic blocks, their successors and dominators.

NVRTC lays a function out so that every edge but a loop's back edge goes forward in the text,
so text order is a topological order of the forward edges; the analyses here rely on that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpulab.explain.ptx import Function


@dataclass
class Block:
    """A basic block: instructions start..end-1 and the blocks control can go to next."""

    start: int
    end: int
    succ: list[int] = field(default_factory=list)


def _ends_block(op: str) -> bool:
    return op.split(".")[0] in ("bra", "brx", "ret", "exit", "trap")


def blocks(fn: Function) -> tuple[list[Block], list[int]]:
    """The function's basic blocks in text order, and each instruction's block."""
    n = len(fn.insns)
    leaders = {0} | {i for i in fn.labels.values() if i < n}
    for insn in fn.insns:
        if _ends_block(insn.op) and insn.index + 1 < n:
            leaders.add(insn.index + 1)
    starts = sorted(leaders) if n else []
    blocks = [Block(s, e) for s, e in zip(starts, starts[1:] + [n], strict=True)]
    of_insn = [0] * n
    for b, blk in enumerate(blocks):
        for i in range(blk.start, blk.end):
            of_insn[i] = b
    for b, blk in enumerate(blocks):
        last = fn.insns[blk.end - 1]
        falls = b + 1 < len(blocks)
        if last.base == "bra":
            target = fn.labels.get(last.operands[0]) if last.operands else None
            if target is not None and target < n:
                blk.succ.append(of_insn[target])
            falls = falls and bool(last.pred)
        elif last.base in ("ret", "exit", "trap", "brx"):
            falls = falls and bool(last.pred) and last.base != "brx"
        if falls:
            blk.succ.append(b + 1)
    return blocks, of_insn


def dominators(
    blocks: list[Block], preds: list[list[int]]
) -> tuple[list[int | None], list[set[int]]]:
    """Each block's immediate dominator and the blocks it dominates, over forward edges (text
    order is topological)."""
    idom: list[int | None] = [None] * len(blocks)

    def up(x: int) -> int:
        return idom[x] or 0

    for b in range(1, len(blocks)):
        fwd = [p for p in preds[b] if p < b and (p == 0 or idom[p] is not None)]
        if not fwd:
            continue
        d = fwd[0]
        for p in fwd[1:]:  # the nearest common dominator: walk the later one up
            x, y = d, p
            while x != y:
                x, y = (up(x), y) if x > y else (x, up(y))
            d = x
        idom[b] = d
    under: list[set[int]] = [{b} for b in range(len(blocks))]
    for b in range(len(blocks) - 1, 0, -1):
        parent = idom[b]
        if parent is not None:
            under[parent] |= under[b]
    return idom, under


def predecessors(blocks: list[Block]) -> list[list[int]]:
    """Each block's predecessors."""
    preds: list[list[int]] = [[] for _ in blocks]
    for b, blk in enumerate(blocks):
        for s in blk.succ:
            preds[s].append(b)
    return preds
