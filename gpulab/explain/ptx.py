"""What a kernel's PTX says: its memory instructions, loops, barriers and atomics, and for each
address how it moves from one thread to the next.

The PTX comes from NVRTC with `-lineinfo`, so every instruction carries the line of the kernel
source it came from (`.loc`). Addresses are followed with a small abstract interpretation: each
register holds `base + cx*threadIdx.x + cy*threadIdx.y + cz*threadIdx.z`, where `base` and the
coefficients are polynomials over values every thread of a block shares (kernel parameters by
their C names, `blockIdx.x`, `blockDim.x`, ...). Multiplying two values that both vary from
thread to thread, a division, a remainder, a shift right or a value loaded from memory makes the
coefficient unknown: then nothing is claimed about that access. Registers PTX reassigns (loop
counters) take the join of all their assignments: a coefficient that is the same in all of them
stays, anything else becomes unknown. The analysis sees PTX, not SASS: ptxas keeps PTX's memory
instructions and their widths (`ld.global.v4.f32` is an `LDG.E.128`), but it can schedule,
unroll or, rarely, drop them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from gpulab.core.ptx_text import Function, Insn
from gpulab.core.ptx_text import parse as parse  # the explain card reads `ptx.parse`

# ----------------------------------------------------------------------------- polynomials
# A polynomial is a sorted tuple of (monomial, coefficient); a monomial is a sorted tuple of
# symbol names; () is the constant term. () as a whole is zero.

Poly = tuple[tuple[tuple[str, ...], int], ...]
ZERO: Poly = ()
MAX_TERMS = 12


def const(c: int) -> Poly:
    """The polynomial of a constant."""
    return (((), c),) if c else ZERO


def sym(name: str) -> Poly:
    """The polynomial of one symbol."""
    return (((name,), 1),)


def _norm(terms: dict[tuple[str, ...], int]) -> Poly | None:
    out = tuple(sorted((m, c) for m, c in terms.items() if c))
    return out if len(out) <= MAX_TERMS else None


def padd(a: Poly | None, b: Poly | None, sign: int = 1) -> Poly | None:
    """a + sign*b, or None when either is unknown."""
    if a is None or b is None:
        return None
    terms = dict(a)
    for m, c in b:
        terms[m] = terms.get(m, 0) + sign * c
    return _norm(terms)


def pmul(a: Poly | None, b: Poly | None) -> Poly | None:
    """a * b, or None when either is unknown."""
    if a is None or b is None:
        return None
    terms: dict[tuple[str, ...], int] = {}
    for ma, ca in a:
        for mb, cb in b:
            m = tuple(sorted(ma + mb))
            terms[m] = terms.get(m, 0) + ca * cb
    return _norm(terms)


def pconst(a: Poly | None) -> int | None:
    """The value of a constant polynomial, else None."""
    if a is None:
        return None
    if a == ZERO:
        return 0
    if len(a) == 1 and a[0][0] == ():
        return a[0][1]
    return None


def psubst(a: Poly | None, values: dict[str, int]) -> Poly | None:
    """`a` with the named symbols replaced by numbers."""
    if a is None:
        return None
    terms: dict[tuple[str, ...], int] = {}
    for m, c in a:
        rest = []
        for s in m:
            if s in values:
                c *= values[s]
            else:
                rest.append(s)
        key = tuple(rest)
        terms[key] = terms.get(key, 0) + c
    return _norm(terms)


def psplit(a: Poly) -> tuple[Poly, int]:
    """(the symbolic part, the constant)."""
    c = 0
    rest = []
    for m, k in a:
        if m == ():
            c = k
        else:
            rest.append((m, k))
    return tuple(rest), c


def pformat(a: Poly | None) -> str:
    """C-like text: 4*cols + 8."""
    if a is None:
        return "?"
    if a == ZERO:
        return "0"
    parts = []
    for m, c in sorted(a, key=lambda t: (len(t[0]), t[0])):
        names = "*".join("<runtime>" if s.startswith("?") else s for s in m)
        if not names:
            parts.append(str(c))
        elif c == 1:
            parts.append(names)
        elif c == -1:
            parts.append("-" + names)
        else:
            parts.append(f"{c}*{names}")
    return " + ".join(parts).replace("+ -", "- ")


# ----------------------------------------------------------------------------- values


class Val(NamedTuple):
    """A value as base + cx*tid.x + cy*tid.y + cz*tid.z, each part a polynomial or None
    (unknown)."""

    base: Poly | None
    cx: Poly | None
    cy: Poly | None
    cz: Poly | None

    @property
    def uniform(self) -> bool:
        """True when the value is the same for every thread."""
        return self.cx == ZERO and self.cy == ZERO and self.cz == ZERO

    @property
    def known(self) -> bool:
        """Its thread-to-thread coefficients are all known."""
        return self.cx is not None and self.cy is not None and self.cz is not None


TOP = Val(None, None, None, None)


def uniform(base: Poly | None) -> Val:
    """The Val that is `base` for every thread."""
    return Val(base, ZERO, ZERO, ZERO)


def vadd(a: Val, b: Val, sign: int = 1) -> Val:
    """a + sign*b, part by part."""
    return Val(*(padd(x, y, sign) for x, y in zip(a, b, strict=True)))


def vmul(a: Val, b: Val) -> Val:
    """a * b, known only when one side is uniform."""
    if a.uniform and a.base is not None:
        return Val(*(pmul(a.base, y) for y in b))
    if b.uniform and b.base is not None:
        return Val(*(pmul(x, b.base) for x in a))
    return TOP


def vscale(a: Val, k: int) -> Val:
    """a * k."""
    return vmul(a, uniform(const(k)))


def vjoin(old: Val, new: Val, own: str) -> Val:
    """Where `old` and `new` meet (a loop's back edge): the parts they agree on, the rest
    unknown; a uniform value of unknown base becomes the symbol `own`."""
    if old == new:
        return old
    parts = [x if x == y else None for x, y in zip(old, new, strict=True)]
    v = Val(*parts)
    if v.base is None and v.uniform:
        v = v._replace(base=sym(own))
    return v


_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


# ----------------------------------------------------------------------------- dataflow

_SPECIAL = {
    "%tid.x": Val(ZERO, const(1), ZERO, ZERO),
    "%tid.y": Val(ZERO, ZERO, const(1), ZERO),
    "%tid.z": Val(ZERO, ZERO, ZERO, const(1)),
}
for _axis in "xyz":
    _SPECIAL[f"%ntid.{_axis}"] = uniform(sym(f"blockDim.{_axis}"))
    _SPECIAL[f"%ctaid.{_axis}"] = uniform(sym(f"blockIdx.{_axis}"))
    _SPECIAL[f"%nctaid.{_axis}"] = uniform(sym(f"gridDim.{_axis}"))
_NO_DEST = {
    "st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence", "prefetch",
    "prefetchu", "call", "trap", "brkpt", "cp", "mbarrier", "pmevent", "nanosleep", "setp",
    "stmatrix", "griddepcontrol", "discard", "applypriority", "tensormap", "cp.async",
}  # fmt: skip
_INT = re.compile(r"[sub](8|16|32|64)")


WARP = 32


def _is_int(t: str) -> bool:
    return bool(_INT.fullmatch(t))


def _is_int_bits(t: str) -> bool:
    return bool(re.fullmatch(r"[subp]?(8|16|32|64)|b(8|16|32|64)", t)) and t != "pred"


def _address(text: str) -> tuple[str, int]:
    """`[%rd5+16]` -> ("%rd5", 16); `[tile]` -> ("tile", 0)."""
    inner = text.strip()[1:-1].strip()
    m = re.fullmatch(r"([%\w$.]+)\s*(?:\+\s*(-?\w+))?", inner)
    if not m:
        return inner, 0
    off = m.group(2)
    try:
        return m.group(1), int(off, 0) if off else 0
    except ValueError:
        return m.group(1), 0


class Dataflow:
    """Register values of one function, to a fixed point.

    `bitwise` (Triton's PTX): LLVM writes an add of values with no bits in common as `or` (a
    program's offset | a thread's part | an element's index), and Triton cuts a thread's index to
    its place in a layout with `and`, `shr` and `bfe`. With it an `or` is an add, an `and` that
    keeps every bit the lanes of a warp can set is the value itself, and a shift that drops every
    bit the lanes set (the warp's index) is the same for the warp's lanes: what a warp's request
    needs. NVRTC's code is read without it, as before.
    """

    def __init__(
        self, fn: Function, param_names: list[str] | None = None, *, bitwise: bool = False
    ) -> None:
        self.fn = fn
        self.bitwise = bitwise
        self.names = {}
        for i, p in enumerate(fn.params):
            self.names[p] = param_names[i] if param_names and i < len(param_names) else p
        self.regs: dict[str, Val] = {}
        for _ in range(24):
            if not self._pass():
                break

    def operand(self, text: str) -> Val | None:
        """The Val of an operand (register, special register or immediate), or None when unknown."""
        t = text.strip()
        if t in _SPECIAL:
            return _SPECIAL[t]
        if t.startswith("%"):
            if t.startswith(("%tid", "%laneid", "%warpid", "%clock", "%globaltimer", "%smid")):
                return TOP
            if t.startswith(("%ntid", "%ctaid", "%nctaid", "%nsmid", "%cluster")):
                return uniform(sym(t))
            return self.regs.get(t)
        if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)[uU]?", t):
            return uniform(const(int(t.rstrip("uU"), 0)))
        if re.fullmatch(r"0[fFdD][0-9a-fA-F]+", t):
            return uniform(sym("?imm:" + t))
        if re.fullmatch(r"[\w$]+", t):
            return uniform(sym("&" + t))  # the address of a variable (shared, global, const)
        return TOP

    def _opaque(self, srcs: list[Val | None], own: str) -> Val | None:
        if any(s is None for s in srcs):
            return None
        if all(s.uniform for s in srcs if s is not None):
            return uniform(sym("?" + own))
        return TOP

    def _transfer(self, insn: Insn) -> list[tuple[str, Val | None]]:
        base, parts, ops = insn.base, insn.parts, insn.operands
        if base in _NO_DEST or insn.op.startswith("cp.async") or not ops:
            return []
        dst = ops[0]
        if dst.startswith("{"):
            regs = [r.strip() for r in dst.strip("{}").split(",")]
            return [(r, TOP) for r in regs if r.startswith("%") and not r.startswith("%p")]
        if not dst.startswith("%") or dst.startswith("%p"):
            return []
        srcs = ops[1:]
        vals = [self.operand(s) for s in srcs if not s.startswith("[")]
        last = parts[-1] if len(parts) > 1 else ""
        v: Val | None
        if base == "ld" or base == "ldu":
            if "param" in parts and srcs and srcs[0].startswith("["):
                name, _ = _address(srcs[0])
                return [(dst, uniform(sym(self.names.get(name, name))))]
            addr = self._addr_val(srcs[0]) if srcs else None
            v = None if addr is None else (uniform(sym("?" + dst)) if addr.uniform else TOP)
        elif base == "atom":
            v = TOP
        elif base in ("mov", "cvta") and len(srcs) == 1:
            v = vals[0] if vals else None
        elif base == "cvt":
            types = [p for p in parts[1:] if re.fullmatch(r"[subf](8|16|32|64)|bf16", p)]
            v = vals[0] if all(_is_int(t) for t in types) and vals else self._opaque(vals, dst)
        elif base in ("add", "sub") and _is_int(last) and "cc" not in parts and len(vals) == 2:
            a, b = vals
            v = None if a is None or b is None else vadd(a, b, 1 if base == "add" else -1)
        elif base == "mul" and ("lo" in parts or "wide" in parts) and len(vals) == 2:
            a, b = vals
            v = None if a is None or b is None else vmul(a, b)
        elif base == "mad" and ("lo" in parts or "wide" in parts) and len(vals) == 3:
            a, b, c = vals
            v = None if a is None or b is None or c is None else vadd(vmul(a, b), c)
        elif base == "shl" and len(vals) == 2:
            a, k = vals
            kk = pconst(k.base) if k is not None and k.uniform else None
            if a is None or k is None:
                v = None
            elif kk is not None and 0 <= kk < 63:
                v = vscale(a, 1 << kk)
            else:
                v = self._opaque(vals, dst)
        elif base == "neg" and _is_int(last) and len(vals) == 1:
            v = None if vals[0] is None else vscale(vals[0], -1)
        elif self.bitwise and base == "or" and _is_int_bits(last) and len(vals) == 2:
            a, b = vals
            v = None if a is None or b is None else vadd(a, b)
        elif self.bitwise and base in ("and", "shr", "bfe") and len(vals) >= 2:
            v = self._cut(base, vals, dst)
        elif base == "selp" and len(vals) >= 2:
            a, b = vals[0], vals[1]
            v = None if a is None or b is None else vjoin(a, b, dst)
        else:
            v = self._opaque(vals, dst)
        return [(dst, v)]

    def _cut(self, base: str, vals: list[Val | None], dst: str) -> Val | None:
        """`and x, mask`, `shr x, k` or `bfe x, pos, len` of a lane-varying x = c*tid.x (bitwise
        mode): x itself when no lane of a warp loses a bit, a value the same for the warp's
        lanes when every lane's bits are dropped, else unknown."""
        if any(v is None for v in vals):
            return None
        x = vals[0]
        ks = [pconst(v.base) if v is not None and v.uniform else None for v in vals[1:]]
        assert x is not None
        c = pconst(x.cx)
        if x.uniform or None in ks or c is None or c < 0 or x.base != ZERO:
            return self._opaque(vals, dst)
        if x.cy != ZERO or x.cz != ZERO:
            return TOP
        nums = [k for k in ks if k is not None]
        lanes = [c * t for t in range(WARP)]
        if base == "and":
            shift, mask = 0, nums[0]
        elif base == "shr":
            shift, mask = nums[0], -1
        else:
            shift, mask = nums[0], (1 << nums[1]) - 1 if len(nums) > 1 and nums[1] else -1
        if not 0 <= shift < 64:
            return TOP
        cut = [(v >> shift) & mask for v in lanes]
        if shift == 0 and cut == lanes:
            return x
        if len(set(cut)) == 1 and (c * WARP) % (1 << shift) == 0:
            return uniform(sym("?warp" + dst))
        return TOP

    def _addr_val(self, text: str) -> Val | None:
        name, off = _address(text)
        v = self.operand(name)
        if v is None:
            return None
        return vadd(v, uniform(const(off))) if off else v

    def _pass(self) -> bool:
        changed = False
        for insn in self.fn.insns:
            for reg, val in self._transfer(insn):
                if val is None:
                    continue
                old = self.regs.get(reg)
                new = val if old is None else vjoin(old, val, reg)
                if new != old:
                    self.regs[reg] = new
                    changed = True
        return changed

    def address(self, insn: Insn, operand: str) -> Val | None:
        """The Val of the address an instruction's memory operand reads or writes."""
        return self._addr_val(operand)


# ----------------------------------------------------------------------------- facts


@dataclass
class Access:
    """One memory instruction."""

    index: int
    line: int | None
    kind: str  # load, store, atomic
    space: str  # global, shared, local, const, generic
    width: int  # bytes per thread
    op: str
    addr: Val | None
    loop: int | None  # index of the innermost loop holding it
    cached: str = ""  # "nc" for the read-only path


@dataclass
class Loop:
    """A loop found from a backward branch: its first and last instruction and its depth."""

    start: int
    end: int
    line: int | None
    depth: int = 1

    def holds(self, i: int) -> bool:
        """True when instruction `i` is inside the loop."""
        return self.start <= i <= self.end


@dataclass
class Facts:
    """What the PTX of one function says: memory accesses, loops, barriers, FMAs and calls."""

    name: str
    accesses: list[Access] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    barriers: list[Insn] = field(default_factory=list)
    fmas: list[Insn] = field(default_factory=list)  # fp32 fma / mad
    calls: list[str] = field(default_factory=list)
    shared_decl: dict[str, int] = field(default_factory=dict)
    local_decl: dict[str, int] = field(default_factory=dict)
    dataflow: Dataflow | None = None
    function: Function | None = None

    def loop_of(self, index: int) -> Loop | None:
        """The innermost loop holding instruction `index`, or None."""
        inner = [lp for lp in self.loops if lp.holds(index)]
        return min(inner, key=lambda lp: lp.end - lp.start) if inner else None

    def in_loop(self, index: int, loop: Loop) -> bool:
        """True when instruction `index` is inside `loop`."""
        return loop.holds(index)


def _width(insn: Insn) -> int:
    parts = insn.parts[1:]
    vec = 1
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1])
    size = 4
    for p in parts:
        m = re.fullmatch(r"[subf](8|16|32|64|128)|bf16|f16x2|bf16x2", p)
        if m:
            size = 4 if p.endswith("x2") else 2 if p == "bf16" else _TYPE_BYTES[m.group(1)]
    return vec * size


def _space(parts: list[str]) -> str:
    for s in ("global", "shared", "local", "const", "param"):
        if s in parts or any(p.startswith(s + "::") for p in parts):
            return s
    return "generic"


def facts(fn: Function, param_names: list[str] | None = None, *, bitwise: bool = False) -> Facts:
    """The Facts of one parsed function (`bitwise`: Triton's PTX, see Dataflow)."""
    flow = Dataflow(fn, param_names, bitwise=bitwise)
    out = Facts(
        fn.name,
        shared_decl=dict(fn.shared),
        local_decl=dict(fn.local),
        dataflow=flow,
        function=fn,
    )
    for insn in fn.insns:
        if insn.base == "bra" and insn.operands:
            target = fn.labels.get(insn.operands[0])
            if target is not None and target <= insn.index:
                out.loops.append(Loop(target, insn.index, insn.line))
    for lp in out.loops:
        lp.depth = sum(1 for o in out.loops if o.start <= lp.start and lp.end <= o.end)
    for insn in fn.insns:
        base, parts = insn.base, insn.parts
        if base in ("bar", "barrier") and ("sync" in parts or "red" in parts or len(parts) == 1):
            out.barriers.append(insn)
        elif base in ("fma", "mad") and "f32" in parts:
            out.fmas.append(insn)
        elif base == "call":
            callee = next((o for o in insn.operands if re.fullmatch(r"[\w$]+", o)), "")
            out.calls.append(callee)
        kind = {"ld": "load", "ldu": "load", "st": "store", "atom": "atomic", "red": "atomic"}.get(
            base
        )
        if kind is None and insn.op.startswith("cp.async") and "shared" in insn.op:
            # cp.async.ca.shared.global [dst], [src], 16: a global load into shared memory
            if len(insn.operands) >= 3 and insn.operands[1].startswith("["):
                try:
                    width = int(insn.operands[2], 0)
                except ValueError:
                    width = 16
                loop = out.loop_of(insn.index)
                addr = flow.address(insn, insn.operands[1])
                out.accesses.append(
                    Access(insn.index, insn.line, "load", "global", width, insn.op, addr,
                           None if loop is None else loop.start)
                )  # fmt: skip
            continue
        if kind is None:
            continue
        space = _space(parts)
        if space == "param":
            continue
        operand = next((o for o in insn.operands if o.startswith("[")), None)
        if operand is None:
            continue
        loop = out.loop_of(insn.index)
        out.accesses.append(
            Access(
                insn.index,
                insn.line,
                kind,
                space,
                _width(insn),
                insn.op,
                flow.address(insn, operand),
                None if loop is None else loop.start,
                "nc" if "nc" in parts else "",
            )
        )
    return out


def kernel_params(source: str, name: str) -> list[str]:
    """The C parameter names of `extern "C" __global__ void name(...)`, in order."""
    m = re.search(r"\b" + re.escape(name) + r"\s*\(([^)]*)\)\s*\{", source)
    if not m:
        return []
    names = []
    for decl in m.group(1).split(","):
        decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
        ident = re.findall(r"[A-Za-z_]\w*", decl)
        if ident:
            names.append(ident[-1])
    return names
