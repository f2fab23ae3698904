"""The learner's Triton kernels in the static tier: found in the file's text, compiled in a child
process (triton_capture.py), read as the CUDA C kernels are.

Which functions are Triton kernels is read with `ast` (a decorator `triton.jit`, `jit` from
triton, or triton's `autotune` / `heuristics` over one). Compiling them needs the arguments of a
real call, because Triton specialises a kernel on them (a pointer 16-byte aligned, an integer a
multiple of 16) and that decides its load widths: the child calls the learner's function once on
the exercise's timed inputs with every launch recorded, not run, and compiles each launched
kernel for the target architecture. The learner's code, torch and Triton stay in the child.

Triton's PTX carries `.loc` lines of the learner's own file, so a Triton kernel's "kernel line"
is its file line: its KernelSource starts at line 1 of the file.
"""

from __future__ import annotations

import ast
import base64
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.core.errors import Cancelled
from gpulab.core.nvrtc import parse_ptxas_log
from gpulab.explain import cubin, diagnose, ptx, tools
from gpulab.explain.findings import KernelReport
from gpulab.explain.source import KernelSource

FACTORY = "triton.jit"
CAPTURE_TIMEOUT_S = 180.0  # torch's import, the call, a compile of each kernel: seconds


@dataclass(frozen=True)
class JitFunction:
    """A function of the learner's file decorated as a Triton kernel."""

    name: str
    line: int  # the def line
    first: int  # the first decorator's line
    last: int


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _triton_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound to the triton module, names bound to triton's decorators)."""
    modules, decorators = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton":
                    modules.add(a.asname or "triton")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("triton"):
            for a in node.names:
                if a.name in ("jit", "autotune", "heuristics"):
                    decorators.add(a.asname or a.name)
    return modules, decorators


def jit_functions(text: str) -> list[JitFunction]:
    """The Triton kernels defined at the top level of a file, in order; [] when it does not
    parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    modules, decorators = _triton_names(tree)
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.decorator_list:
            continue
        names = [_dotted(d) for d in node.decorator_list]
        if any(
            n in decorators
            or any(n == f"{m}.{d}" for m in modules for d in ("jit", "autotune"))
            or any(n == f"{m}.heuristics" for m in modules)
            for n in names
        ):
            first = min(d.lineno for d in node.decorator_list)
            out.append(JitFunction(node.name, node.lineno, first, node.end_lineno or node.lineno))
    return out


@dataclass
class Compiled:
    """One kernel as the child compiled it (triton_capture.compile_launch's data)."""

    name: str
    function: str
    file: str  # the learner's file as Triton names it in the PTX's .file
    ptx: str
    cubin: bytes
    num_warps: int
    shared: int
    grid: list[int] | None
    params: list[str]
    config: str = ""
    ptxas: str = ""
    unaligned: list[str] = field(default_factory=list)
    indivisible: dict[str, int] = field(default_factory=dict)
    version: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Compiled:
        return cls(
            name=str(d["name"]),
            function=str(d.get("function", d["name"])),
            file=str(d.get("file", "")),
            ptx=str(d["ptx"]),
            cubin=base64.b64decode(d["cubin"]),
            num_warps=int(d["num_warps"]),
            shared=int(d.get("shared", 0)),
            grid=[int(g) for g in d["grid"]] if d.get("grid") else None,
            params=[str(p) for p in d.get("params", [])],
            config=str(d.get("config", "")),
            ptxas=str(d.get("ptxas", "")),
            unaligned=[str(p) for p in d.get("unaligned", [])],
            indivisible={str(k): int(v) for k, v in (d.get("indivisible") or {}).items()},
            version=str(d.get("triton", "")),
        )


def capture(path: Path, exercise: str, cc: int) -> tuple[list[Compiled], list[str]]:
    """Compile the Triton kernels that `path`'s function launches on `exercise`'s timed inputs,
    for compute capability `cc` (in a child process); (kernels, notes)."""
    argv = [
        sys.executable, "-m", "gpulab.explain.triton_capture",
        "--exercise", exercise, "--file", str(path), "--cc", str(cc),
    ]  # fmt: skip
    env = tools.python_env()
    env.pop("TRITON_INTERPRET", None)  # compiled, not interpreted: see triton_capture
    try:
        ran = tools.run(argv, env=env, timeout=CAPTURE_TIMEOUT_S)
    except (TimeoutError, Cancelled, OSError) as exc:
        return [], [f"Triton: could not compile your kernels ({exc})"]
    try:
        data = json.loads(ran.out)
    except ValueError:
        last = (ran.err.strip().splitlines() or ["no output"])[-1][:200]
        return [], [f"Triton: the compile process failed ({last})"]
    kernels = [Compiled.from_dict(k) for k in data.get("kernels", [])]
    return kernels, [str(n) for n in data.get("notes", [])]


def kernel_source(k: Compiled, fn: JitFunction | None) -> KernelSource:
    """The KernelSource the rules read for a Triton kernel: its lines are the file's."""
    return KernelSource(
        k.name, "", factory=FACTORY, line=fn.line if fn else 0, code_line=1, variable=k.function
    )


def report(
    k: Compiled, fn: JitFunction | None, dev: diagnose.Device, metric: str | None
) -> KernelReport:
    """One compiled Triton kernel's report: resources from its cubin, the launch Triton makes
    (32 x num_warps threads, the grid of the recorded call), occupancy and every rule."""
    ks = kernel_source(k, fn)
    rep = KernelReport(k.name, ks.line, code_line=ks.code_line)
    try:
        res = cubin.read(k.cubin).get(k.name)
    except cubin.CubinError as exc:
        rep.error = f"cannot read the cubin: {exc}"
        return rep
    if res is None:
        rep.error = f"no kernel named {k.name!r} in Triton's cubin"
        return rep
    info = parse_ptxas_log(k.ptxas).get(k.name) if k.ptxas else None
    parsed = ptx.parse(k.ptx, source_name=k.file)
    pf = parsed.get(k.name)
    facts = ptx.facts(pf, k.params, bitwise=True) if pf is not None else None
    launch = diagnose.Launch(
        (32 * k.num_warps,),
        tuple(k.grid) if k.grid else None,
        k.shared,
        "static",
        ks.line,
    )
    rep.resources = {
        "registers": res.registers,
        "shared_static": res.shared_static,
        "shared_dynamic": k.shared,
        "local_bytes": res.local_bytes,
        "launch_bounds": res.max_threads,
        "maxreg": res.maxreg,
        "num_warps": k.num_warps,
        "source": f"triton {k.version} {dev.arch.name}",
    }
    if info is not None:
        rep.resources |= {"spill_stores": info.spill_stores, "spill_loads": info.spill_loads}
    subject = diagnose.Subject(ks, res, info, dev, facts, launch, metric)
    subject.triton = diagnose.TritonFacts(k.unaligned, k.indivisible, k.config)
    subject.occupancy = diagnose.occupancy_of(ks, res, launch, dev, None)
    rep.launch = launch.to_dict()
    if subject.occupancy is not None:
        rep.occupancy = subject.occupancy.to_dict()
    rep.findings += diagnose.findings(subject)
    return rep
