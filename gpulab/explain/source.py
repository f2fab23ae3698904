"""The learner's kernels and launches, read from their file without running it.

The file is parsed with `ast`; nothing in it is executed. We look for

- kernel factories: `cupy.RawKernel(code, name, options=...)` and `cupy.RawModule(code=...)`
  with `.get_function(name)` (the module's own `from cupy import RawKernel` too). `code` may be
  a string, a name bound to one (module or function level), a concatenation, `.replace()` /
  `.format()` with constant arguments, or an f-string whose fields are names bound to constants;
  anything else (a string built at run time) is reported as a note, not guessed;
- launches: a call of a name bound to a kernel, `k(grid, block, args, shared_mem=...)`. The
  grid and block are evaluated from literals and the enclosing function's simple assignments
  (`threads = 256`, `block = (32, 8)`); a size only known at run time (`n = a.size`) makes the
  grid "grows with the input"; `...attributes["MultiProcessorCount"]` is the GPU's SM count.

ElementwiseKernel and ReductionKernel bodies are CuPy's kernels around the learner's
expression: they are noted, not compiled.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

FACTORIES = {"RawKernel", "RawModule"}
OTHER_FACTORIES = {"ElementwiseKernel", "ReductionKernel"}


class Big:
    """A size only known at run time, assumed large: absorbs arithmetic, loses to min()."""

    def __repr__(self) -> str:
        return "Big"

    def _absorb(self, other: Any) -> Big:
        return self

    __add__ = __radd__ = __mul__ = __rmul__ = __floordiv__ = __truediv__ = _absorb
    __sub__ = __rsub__ = __pow__ = _absorb

    def __rfloordiv__(self, other: Any) -> int:
        return 0  # x // Big

    def __lt__(self, other: Any) -> bool:
        return False

    def __gt__(self, other: Any) -> bool:
        return not isinstance(other, Big)

    def __le__(self, other: Any) -> bool:
        return isinstance(other, Big)

    def __ge__(self, other: Any) -> bool:
        return True


BIG = Big()


class Unknown(Exception):
    """An expression this reader does not evaluate."""


@dataclass
class KernelSource:
    """One kernel found in the learner's file: its name, CUDA source, options and line."""

    name: str  # the kernel's name in the C source
    code: str  # the CUDA C source
    options: tuple[str, ...] = ()
    factory: str = "RawKernel"
    line: int = 0  # the factory call's line in the learner's file
    code_line: int | None = None  # the file line of the source's first line (exact strings)
    variable: str = ""  # the Python name the kernel is bound to

    def file_line(self, kernel_line: int | None) -> int | None:
        """The learner's file line of kernel line `kernel_line`, or None."""
        if kernel_line is None or self.code_line is None:
            return None
        return self.code_line + kernel_line - 1


@dataclass
class LaunchSite:
    """One launch found in the learner's file: its grid, block and shared memory."""

    kernel: str  # the C name
    grid: tuple[Any, ...] | None  # ints, BIG where it grows with the input; None: unknown
    block: tuple[int, ...] | None
    shared_mem: int | None = 0
    line: int = 0
    grid_text: str = ""
    block_text: str = ""

    @property
    def threads(self) -> int | None:
        """Threads per block, or None when unknown."""
        return math.prod(self.block) if self.block else None

    @property
    def blocks(self) -> int | Big | None:
        """Blocks in the grid: a number, BIG when it grows with the input, None when unknown."""
        if self.grid is None:
            return None
        if any(isinstance(g, Big) for g in self.grid):
            return BIG
        return math.prod(self.grid)


@dataclass
class Scan:
    """The kernels and launches found in one file, and notes on what could not be read."""

    kernels: list[KernelSource] = field(default_factory=list)
    launches: list[LaunchSite] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


class _Env:
    """Names bound to simple values: module level, then the enclosing function."""

    def __init__(self, sms: int) -> None:
        self.sms = sms
        self.module: dict[str, ast.AST] = {}
        self.local: dict[str, ast.AST] = {}
        self.depth = 0

    def lookup(self, name: str) -> ast.AST | None:
        return self.local.get(name, self.module.get(name))

    def value(self, node: ast.AST, *, strings: bool = False) -> Any:
        self.depth += 1
        try:
            if self.depth > 50:
                raise Unknown("too deep")
            return self._value(node, strings)
        finally:
            self.depth -= 1

    def _value(self, node: ast.AST, strings: bool) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or node.value is None:
                raise Unknown("not a number")
            return node.value
        if isinstance(node, ast.Name):
            bound = self.lookup(node.id)
            if bound is None:
                if strings:
                    raise Unknown(f"`{node.id}` is not bound to a constant")
                return BIG
            return self.value(bound, strings=strings)
        if isinstance(node, ast.Tuple | ast.List):
            return tuple(self.value(e, strings=strings) for e in node.elts)
        if isinstance(node, ast.JoinedStr):
            out = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    out.append(str(part.value))
                elif isinstance(part, ast.FormattedValue):
                    v = self.value(part.value, strings=True)
                    if isinstance(v, Big):
                        raise Unknown("an f-string field known only at run time")
                    spec = self.value(part.format_spec, strings=True) if part.format_spec else ""
                    out.append(format(v, spec))
            return "".join(out)
        if isinstance(node, ast.BinOp):
            a = self.value(node.left, strings=strings)
            b = self.value(node.right, strings=strings)
            if isinstance(a, str) or isinstance(b, str):
                if isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str):
                    return a + b
                if isinstance(node.op, ast.Mod) and isinstance(a, str):
                    return a % b
                raise Unknown("string arithmetic")
            ops = {
                ast.Add: lambda x, y: x + y,
                ast.Sub: lambda x, y: x - y,
                ast.Mult: lambda x, y: x * y,
                ast.FloorDiv: lambda x, y: x // y,
                ast.Div: lambda x, y: x / y,
                ast.Pow: lambda x, y: x**y,
                ast.Mod: lambda x, y: BIG if isinstance(x, Big) else x % y,
                ast.LShift: lambda x, y: BIG if isinstance(x, Big) else x << y,
            }
            fn = ops.get(type(node.op))
            if fn is None:
                raise Unknown("operator")
            if isinstance(b, Big) and isinstance(node.op, ast.FloorDiv | ast.Div):
                raise Unknown("division by a run-time value")
            return fn(a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.value(node.operand, strings=strings)
            if isinstance(v, Big):
                raise Unknown("negative run-time value")
            return -v
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if "multiprocessorcount" in key.value.lower():
                    return self.sms
                raise Unknown("a device attribute")
            seq = self.value(node.value, strings=strings)
            if isinstance(seq, Big):
                return BIG
            idx = self.value(key, strings=strings)
            return seq[idx]
        if isinstance(node, ast.Call):
            fname = _call_name(node.func)
            if fname in ("min", "max") and node.args and not node.keywords:
                vals = [self.value(a, strings=strings) for a in node.args]
                if len(vals) == 1 and isinstance(vals[0], tuple):
                    vals = list(vals[0])
                big = [v for v in vals if isinstance(v, Big)]
                small = [v for v in vals if not isinstance(v, Big)]
                if fname == "min":
                    return min(small) if small else BIG
                return BIG if big else max(small)
            if fname in ("int", "ceil", "floor") and len(node.args) == 1:
                v = self.value(node.args[0], strings=strings)
                return v if isinstance(v, Big) else int(math.ceil(v) if fname == "ceil" else v)
            if fname in ("int32", "int64", "uint32", "intc") and len(node.args) == 1:
                return self.value(node.args[0], strings=strings)
            if fname in ("replace", "format") and isinstance(node.func, ast.Attribute):
                text = self.value(node.func.value, strings=True)
                args = [self.value(a, strings=True) for a in node.args]
                if not isinstance(text, str):
                    raise Unknown("not a string")
                if fname == "replace":
                    if len(args) != 2:
                        raise Unknown("replace() with a count")
                    return text.replace(str(args[0]), str(args[1]))
                kwargs = {k.arg: self.value(k.value, strings=True) for k in node.keywords if k.arg}
                return text.format(*args, **kwargs)
            if fname == "str" and len(node.args) == 1:
                return str(self.value(node.args[0], strings=True))
            if strings:
                raise Unknown(f"a call to {fname or 'a function'}")
            return BIG  # a.size(), len(x), ...: known at run time
        if isinstance(node, ast.Attribute):
            if strings:
                raise Unknown("an attribute")
            return BIG  # a.size, a.shape[0]
        raise Unknown(type(node).__name__)


def _assignments(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """name -> value of simple `name = value` statements (the last one wins), and tuple
    unpacking of a tuple literal."""
    out: dict[str, ast.AST] = {}
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in [stmt, *_walk(stmt)]:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts, strict=False):
                        if isinstance(t, ast.Name):
                            out[t.id] = v
                elif isinstance(target, ast.Tuple):
                    for t in target.elts:
                        if isinstance(t, ast.Name):
                            out[t.id] = ast.Attribute(value=ast.Name("_", ast.Load()), attr="_")
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                out[node.target.id] = node.value
    return out


def _walk(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope, not descending into the functions defined in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    out.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return out


def _text(src: str, node: ast.AST | None) -> str:
    if node is None:
        return ""
    return (ast.get_source_segment(src, node) or "").strip()


def scan(text: str, *, sms: int = 132, filename: str = "your file") -> Scan:
    """Kernels and launches of a learner's file."""
    out = Scan()
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        out.notes.append(f"{filename} does not parse (line {exc.lineno}): {exc.msg}")
        return out
    env = _Env(sms)
    env.module = _assignments(tree.body)
    kernels_by_var: dict[str, list[KernelSource]] = {}
    modules: dict[str, tuple[str, tuple[str, ...], int, int | None]] = {}
    scopes: list[tuple[ast.AST, dict[str, ast.AST]]] = [(tree, {})]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            scopes.append((node, _assignments(node.body)))

    def code_of(call: ast.Call, local: dict[str, ast.AST]) -> tuple[str, int | None] | None:
        arg = call.args[0] if call.args else None
        for kw in call.keywords:
            if kw.arg == "code":
                arg = kw.value
        if arg is None:
            out.notes.append(f"line {call.lineno}: a kernel factory without its code")
            return None
        env.local = local
        node: ast.AST = arg
        while isinstance(node, ast.Name) and (bound := env.lookup(node.id)) is not None:
            node = bound
        try:
            code = env.value(arg, strings=True)
        except (Unknown, TypeError, ValueError, IndexError, KeyError) as exc:
            what = "an f-string" if isinstance(node, ast.JoinedStr) else "built at run time"
            out.notes.append(
                f"line {call.lineno}: the kernel source is {what} ({exc}): explain reads"
                " constant strings only, so this kernel is not explained"
            )
            return None
        if not isinstance(code, str):
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return code, node.lineno  # the literal itself: its line is the code's
        return code, None

    def options_of(call: ast.Call) -> tuple[str, ...]:
        for kw in call.keywords:
            if kw.arg == "options":
                try:
                    v = env.value(kw.value, strings=True)
                except (Unknown, TypeError, ValueError, IndexError, KeyError):
                    out.notes.append(f"line {call.lineno}: options not read (not constant)")
                    return ()
                return tuple(v) if isinstance(v, tuple) else (str(v),)
        return ()

    factory_calls: list[tuple[ast.Call, dict[str, ast.AST], str]] = []
    for scope, local in scopes:
        bound: dict[int, str] = {}
        nodes = _walk(scope)
        for node in nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, *_COMPS)):
                target = node.targets[0]
                name = (
                    target.id
                    if isinstance(target, ast.Name)
                    else target.attr
                    if isinstance(target, ast.Attribute)
                    else ""
                )
                calls = [node.value] + (
                    [c for c in ast.walk(node.value) if isinstance(c, ast.Call)]
                    if isinstance(node.value, _COMPS)
                    else []
                )
                for c in calls:
                    bound[id(c)] = name
        for node in nodes:
            if isinstance(node, ast.Call):
                factory_calls.append((node, local, bound.get(id(node), "")))
    # A factory inside a comprehension over constants ({k: RawKernel(SRC, f"conv_k{k}") for k
    # in (1, 3)}): one kernel for each value.
    each_of: dict[int, list[dict[str, ast.AST]]] = {}
    for comp in ast.walk(tree):
        if isinstance(comp, _COMPS) and len(comp.generators) == 1:
            gen = comp.generators[0]
            if (
                isinstance(gen.target, ast.Name)
                and isinstance(gen.iter, ast.Tuple | ast.List)
                and not gen.ifs
            ):
                for inner in ast.walk(comp):
                    if isinstance(inner, ast.Call):
                        each_of[id(inner)] = [{gen.target.id: v} for v in gen.iter.elts]
    seen_calls: set[int] = set()
    for call, outer, var in factory_calls:
        fname = _call_name(call.func)
        if fname not in FACTORIES or id(call) in seen_calls:
            continue
        seen_calls.add(id(call))
        for each in each_of.get(id(call), [{}]):
            local = {**outer, **each}
            found = code_of(call, local)
            if found is None:
                continue
            code, code_line = found
            opts = options_of(call)
            if fname == "RawKernel":
                kname = None
                if len(call.args) > 1:
                    try:
                        env.local = local
                        kname = env.value(call.args[1], strings=True)
                    except (Unknown, TypeError, ValueError, IndexError, KeyError):
                        kname = None
                for kw in call.keywords:
                    if kw.arg == "name":
                        try:
                            kname = env.value(kw.value, strings=True)
                        except (Unknown, TypeError, ValueError, IndexError, KeyError):
                            kname = None
                if not isinstance(kname, str):
                    out.notes.append(f"line {call.lineno}: the kernel's name is not a constant")
                    continue
                ks = KernelSource(kname, code, opts, "RawKernel", call.lineno, code_line, var)
                out.kernels.append(ks)
                kernels_by_var.setdefault(var, []).append(ks)
            else:
                if any(kw.arg == "name_expressions" for kw in call.keywords):
                    out.notes.append(
                        f"line {call.lineno}: RawModule name_expressions (C++ templates) are"
                        ' not followed: only its extern "C" kernels are explained'
                    )
                modules[var] = (code, opts, call.lineno, code_line)
    for call, _, var in factory_calls:
        fname = _call_name(call.func)
        if fname == "get_function" and isinstance(call.func, ast.Attribute):
            mod = call.func.value
            mod_var = mod.id if isinstance(mod, ast.Name) else _call_name(mod)
            if mod_var in modules and call.args:
                try:
                    kname = env.value(call.args[0], strings=True)
                except (Unknown, TypeError, ValueError, IndexError, KeyError):
                    continue
                code, opts, line, code_line = modules[mod_var]
                ks = KernelSource(str(kname), code, opts, "RawModule", line, code_line, var)
                out.kernels.append(ks)
                kernels_by_var.setdefault(var, []).append(ks)
        elif fname in OTHER_FACTORIES:
            out.notes.append(
                f"line {call.lineno}: {fname}: CuPy writes that kernel around your expression;"
                " explain reads RawKernel and RawModule sources"
            )
    # A module whose functions are never fetched by a constant name: all its extern "C" kernels.
    fetched = {k.code for k in out.kernels if k.factory == "RawModule"}
    for code, opts, line, code_line in modules.values():
        if code not in fetched:
            for kname in extern_c_kernels(code):
                out.kernels.append(KernelSource(kname, code, opts, "RawModule", line, code_line))

    # Launches: calls of a name bound to a kernel, with at least (grid, block).
    for scope, local in scopes:
        for node in _walk(scope):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            var = _call_name(func)  # k(...), self.k(...), or kernels[key](...)
            if var not in kernels_by_var:
                continue
            env.local = local
            grid = _shape(env, node.args[0])
            block = _shape(env, node.args[1])
            shared: int | None = 0
            for kw in node.keywords:
                if kw.arg == "shared_mem":
                    try:
                        v = env.value(kw.value)
                        shared = None if isinstance(v, Big) else int(v)
                    except (Unknown, TypeError, ValueError, IndexError, KeyError):
                        shared = None
            blk = None
            if block is not None and not any(isinstance(b, Big) for b in block):
                blk = tuple(int(b) for b in block)
            for ks in kernels_by_var[var]:
                out.launches.append(
                    LaunchSite(
                        ks.name,
                        grid,
                        blk,
                        shared,
                        node.lineno,
                        _text(text, node.args[0]),
                        _text(text, node.args[1]),
                    )
                )
    return out


def _shape(env: _Env, node: ast.AST) -> tuple[Any, ...] | None:
    try:
        v = env.value(node)
    except (Unknown, TypeError, ValueError, IndexError, KeyError, ZeroDivisionError):
        return None
    if isinstance(v, int | Big):
        return (v,)
    if isinstance(v, tuple) and all(isinstance(x, int | Big) for x in v) and 1 <= len(v) <= 3:
        return v
    return None


def extern_c_kernels(code: str) -> list[str]:
    """Names of the `extern "C" __global__` functions in a source."""
    pat = re.compile(
        r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
        r"(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\("
    )
    pat2 = re.compile(r'extern\s+"C"\s*\{')
    names = pat.findall(code)
    if not names and pat2.search(code):
        names = re.findall(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)", code)
    return names
