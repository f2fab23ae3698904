"""A PTX module read as text: its entries and device functions, each with its instructions
(predicate, opcode, operands, the kernel source line from `.loc`), labels and shared and local
declarations. The facts drawn from it live with their users: `gpulab.explain.ptx` (addresses,
loops, for the explain card) and `gpulab.exercises.ptx_shares` (whether threads share values
through shared memory, for a check on a GPU)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Function", "Insn", "parse"]


@dataclass
class Insn:
    """One PTX instruction: its predicate, opcode, operands and source line."""

    index: int
    line: int | None  # line in the kernel source (from .loc)
    pred: str
    op: str
    operands: list[str]

    @property
    def parts(self) -> list[str]:
        """The opcode split at the dots (ld.global.f32 -> ld, global, f32)."""
        return self.op.split(".")

    @property
    def base(self) -> str:
        """The opcode's first part (ld, st, fma, ...)."""
        return self.parts[0]

    def has(self, *mods: str) -> bool:
        """True when the opcode carries every modifier in `mods`."""
        parts = self.parts[1:]
        return all(m in parts for m in mods)


@dataclass
class Function:
    """One PTX function: its parameters, instructions, labels and shared and local declarations."""

    name: str
    entry: bool
    params: list[str] = field(default_factory=list)  # PTX parameter names, in order
    insns: list[Insn] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    shared: dict[str, int] = field(default_factory=dict)  # .shared declarations: name -> bytes
    local: dict[str, int] = field(default_factory=dict)
    # registers declared in an inner `{ }` (inline asm, a call sequence): a name there may
    # shadow the function's own register of that name
    inner: set[str] = field(default_factory=set)


_ENTRY = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(?")
_REG_NAME = re.compile(r"(%?[A-Za-z_$][\w$]*)(?:<\d+>)?")
_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'\.file\s+(\d+)\s+"([^"]*)"')
_DECL = re.compile(r"\.(shared|local)\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$]+)\[(\d*)\]")
# `.param .u64 x`, `.param .align 8 .b8 s[16]`, `.param .u64 .ptr .global .align 1 x` (Triton)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+\d+\s+)?\.\w+\s+"
    r"(?:\.ptr\s+(?:\.(?:global|shared|const|local)\s+)?(?:\.align\s+\d+\s+)?)?([\w$]+)"
)


def _split_operands(text: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def parse(ptx: str, source_name: str = "kernel.cu") -> dict[str, Function]:
    """The functions of a PTX module, by name."""
    main_file = "1"
    for fm in _FILE.finditer(ptx):
        if fm.group(2).endswith(source_name):
            main_file = fm.group(1)
    funcs: dict[str, Function] = {}
    fn: Function | None = None
    in_params = False
    depth = 0
    line: int | None = None
    module_shared: dict[str, int] = {}
    for raw in ptx.splitlines():
        text = raw.split("//", 1)[0].strip()
        if not text:
            continue
        if fn is None:
            m = _ENTRY.search(text)
            if m and not text.startswith((".extern", ".weak .func;")) and not text.endswith(";"):
                fn = Function(m.group(2), entry=m.group(1) == "entry")
                in_params = True
                depth = 0
                line = None
                continue
            d = _DECL.search(text)
            if d and d.group(1) == "shared":
                module_shared[d.group(3)] = int(d.group(4) or 0)
            continue
        if in_params:
            if text.endswith(";"):
                fn = None  # a declaration (its parameters over several lines), no body
                continue
            p = _PARAM.search(text)
            if p:
                fn.params.append(p.group(1))
            if text.startswith("{"):
                in_params = False
                depth = 1
            continue
        if text.startswith("{"):
            depth += 1
            continue
        if text.startswith("}"):
            depth -= 1
            if depth == 0:
                fn.shared = {**module_shared, **fn.shared}
                funcs[fn.name] = fn
                fn = None
            continue
        loc = _LOC.match(text)
        if loc:
            line = int(loc.group(2)) if loc.group(1) == main_file else None
            continue
        d = _DECL.search(text)
        if d and text.startswith((".shared", ".local")):
            (fn.shared if d.group(1) == "shared" else fn.local)[d.group(3)] = int(d.group(4) or 0)
            continue
        if text.startswith("."):
            if depth > 1 and text.startswith(".reg"):
                fn.inner.update(_REG_NAME.findall(text.split(None, 2)[-1]))
            continue  # .reg, .pragma, ...
        if text.endswith(":"):
            fn.labels[text[:-1]] = len(fn.insns)
            continue
        body = text.rstrip(";").strip()
        pred = ""
        if body.startswith("@"):
            pred, _, body = body.partition(" ")
            pred = pred[1:]
            body = body.strip()
        op, _, rest = body.partition(" ")
        if not op:
            continue
        fn.insns.append(Insn(len(fn.insns), line, pred, op, _split_operands(rest.strip())))
    return funcs
