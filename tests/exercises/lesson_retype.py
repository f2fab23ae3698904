"""What a learner gets by retyping a lesson's code into an exercise: the candidate files the test
of tests/exercises/test_lessons_pass_no_check.py puts through every exercise's check.

A lesson block is retyped in one of two ways:

- Python: the block's definitions that the exercise can use (its entry function, or a name its
  starter defines: a kernel, a helper, a constant), with what they need from the block (the
  imports, helpers and constants they name, transitively), typed into the starter in place of
  the starter's own. The block's demonstration code (prints, timing loops, the tensors it makes
  on a GPU) is left out: a learner copies the definitions, not the demo, and leaving it out lets
  a block written for a GPU be tried on the CPU.
- CUDA C: a `__global__` function of the block (a ```cuda block or a kernel string in a Python
  block) whose name is a kernel of the starter, with the block's `#define`s and `__device__`
  helpers, in place of the starter's kernel of that name.

A block that shares no name with an exercise cannot pass its check (the check calls the entry,
and the starter's own definitions fail), so only the pairs that share one are built.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from dataclasses import dataclass

_KERNEL = re.compile(r'(?:extern\s+"C"\s+)?__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?'
                     r"(\w+)\s*\(")  # fmt: skip
_DEVICE = re.compile(r"__device__[^;{]*?\b(\w+)\s*\(")
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Retyped:
    """One candidate file: what was taken from the block, and the file's text."""

    names: tuple[str, ...]  # the definitions (or kernels) the block supplied
    source: str


@dataclass
class _Stmt:
    node: ast.stmt
    text: str
    defines: set[str]
    uses: set[str]
    is_import: bool


@functools.cache  # each block is retyped into every exercise, each starter for every block
def _statements(source: str) -> list[_Stmt] | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # a fragment with `...` in a signature: nothing a learner could run
    lines = source.splitlines(keepends=True)
    out = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = "".join(lines[first - 1 : node.end_lineno])
        out.append(
            _Stmt(
                node,
                text,
                _defines(node),
                _uses(node),
                isinstance(node, ast.Import | ast.ImportFrom),
            )
        )
    return out


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _uses(node: ast.AST) -> set[str]:
    """The global names a statement reads: a function's parameters and locals are its own."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        own = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        own |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        own |= {
            n.id
            for stmt in body
            for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        outer = [*getattr(node, "decorator_list", []), *args.defaults, *args.kw_defaults]
        if getattr(node, "returns", None) is not None:
            outer.append(node.returns)
        outer += [
            a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.annotation
        ]
        inner = set().union(*(_uses(s) for s in body)) - own
        return inner | set().union(*(_uses(o) for o in outer if o is not None))
    found: set[str] = set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            found |= _uses(child)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            found.add(child.id)
        else:
            found |= _uses(child)
    return found - _BUILTINS


def python_defines(source: str) -> set[str]:
    """Names a file or block defines at its top level (not its imports); empty if it does not
    parse."""
    stmts = _statements(source) or []
    return {name for s in stmts if not s.is_import for name in s.defines}


def _closure(stmts: list[_Stmt], wanted: set[str]) -> list[_Stmt]:
    """The statements that define `wanted`, and those their definitions name, transitively."""
    need, keep = set(wanted), []
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if s not in keep and s.defines & need:
                keep.append(s)
                need |= s.uses
                changed = True
    return [s for s in stmts if s in keep]


def retype_python(block: str, starter: str, entry: str) -> Retyped | None:
    """The starter with the block's definitions of its names (and of `entry`) typed in, or None
    when the block defines none of them."""
    stmts, given = _statements(block), _statements(starter)
    if stmts is None or given is None:
        return None
    theirs = {name for s in given if not s.is_import for name in s.defines} | {entry}
    supplied = {name for s in stmts if not s.is_import for name in s.defines} & theirs
    if not supplied:
        return None
    taken = _closure(stmts, supplied)
    # `from __future__` must open a file: the starter's own stays where it is
    imports = [s.text for s in taken if s.is_import and not _future(s.node)]
    defs = [s for s in taken if not s.is_import]
    overridden = {name for s in defs for name in s.defines}
    last = max((i for i, s in enumerate(given) if s.is_import), default=-1)
    body, placed = [], set()
    for i, s in enumerate(given):
        hit = s.defines & overridden if not s.is_import else set()
        if not hit:
            body.append(s.text)
        # the block's definition where the starter had its own, so module-level code after it
        # (a RawKernel built from SOURCE) sees the block's
        for d in defs:
            if d.defines & hit and id(d) not in placed:
                body.append(d.text)
                placed.add(id(d))
        if i == last:  # the block's imports after the starter's
            body += imports
    if last < 0:
        body = imports + body
    body += [d.text for d in defs if id(d) not in placed]  # its other definitions at the end
    return Retyped(tuple(sorted(supplied)), "\n".join(p.rstrip("\n") for p in body) + "\n")


def _future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def _function_at(text: str, start: int) -> str | None:
    """The C function whose signature starts at `start`, through its closing brace."""
    depth, i = 0, text.find("{", start)
    if i < 0:
        return None
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return None


def kernels(text: str) -> dict[str, str]:
    """The `__global__` functions written out in `text`, by name (a declaration without a body, or
    a signature cut by `...`, is none)."""
    found = {}
    for m in _KERNEL.finditer(text):
        fn = _function_at(text, m.start())
        if fn is not None and "..." not in fn.split("{", 1)[0]:
            found.setdefault(m.group(1), fn)
    return found


def _helpers(text: str, kernel: str) -> str:
    """The block's `#define` lines and `__device__` functions, for a kernel taken from it."""
    out = [line for line in text.splitlines() if line.lstrip().startswith("#define")]
    for m in _DEVICE.finditer(text):
        fn = _function_at(text, m.start())
        if fn is not None and fn not in kernel:
            out.append(fn)
    return "\n".join(out)


def retype_kernels(block: str, starter: str) -> Retyped | None:
    """The starter with each of its kernels that the block writes out replaced by the block's, or
    None when the block writes none of them."""
    mine, given = kernels(block), kernels(starter)
    names = sorted(set(mine) & set(given))
    if not names:
        return None
    source = starter
    for name in names:
        helpers = _helpers(block, mine[name])
        source = source.replace(given[name], (helpers + "\n" if helpers else "") + mine[name], 1)
    return Retyped(tuple(names), source)
