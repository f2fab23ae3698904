"""The learner's source, read before it runs, for the names only code looking for the grader needs.

The learner's code shares the grader's interpreter (docs/exercises.md says why), so it can find
what the grader watches with: the torch modes that refuse a library's one-call answer, the
profiler that reads where work ran, dynamo's counters of graphs and breaks, the grader's own
frames. A solution that reads or switches those off can behave one way when watched and another
when timed, or answer from the grader's locals. None of these names has a use in an exercise's
answer, so a file that names one fails at once with the line, before any input is made.

This is a speed bump, not a wall: a name built at run time (`getattr(torch._C, "_len_" + ...)`)
is not seen. It stops the two-line versions of these shortcuts, which is what a learner who
wants gold without the work writes first.

Names are matched as identifiers in the syntax tree (attributes, names, imported names), so a
comment or a string that mentions one is no match.
"""

from __future__ import annotations

import ast

from gpulab.exercises.own_work import dotted_name

# identifier -> what it reaches for (the message's tail)
_GRADER = "the check watches through it"
REACHING: dict[str, str] = {
    **dict.fromkeys(
        (
            "_len_torch_function_stack",
            "_pop_torch_function_stack",
            "_push_on_torch_function_stack",
            "_get_function_stack_at",
            "_is_torch_function_mode_enabled",
            "_get_current_function_mode",
            "_get_current_function_mode_stack",
            "DisableTorchFunction",
            "DisableTorchFunctionSubclass",
            "_len_torch_dispatch_stack",
            "_pop_torch_dispatch_stack",
            "_push_on_torch_dispatch_stack",
            "_get_dispatch_stack_at",
            "_get_current_dispatch_mode",
            "_get_current_dispatch_mode_stack",
            "_disable_current_modes",
            "_pop_mode",
            "_pop_mode_temporarily",
            "_get_dispatch_mode",
            "_unset_dispatch_mode",
            "_set_dispatch_mode",
        ),
        f"reads or switches off torch's function and dispatch modes: {_GRADER}",
    ),
    **dict.fromkeys(
        ("_is_profiler_enabled", "_profiler_enabled", "_profiler_type"),
        f"asks whether torch's profiler is on: {_GRADER}",
    ),
    **dict.fromkeys(
        (
            "_getframe",
            "currentframe",
            "getouterframes",
            "f_back",
            "f_locals",
            "f_globals",
            "extract_stack",
            "format_stack",
            "print_stack",
            "walk_stack",
            "getinnerframes",
            "tb_frame",
            # a frame's locals without the names above: inspect.stack()'s frames read through
            # getargvalues found the timer's record and scaled the learner's seconds (gold)
            "getargvalues",
            "getframeinfo",
            "getcoroutinelocals",
            "getgeneratorlocals",
        ),
        "reads the callers' frames: the grader's references live there",
    ),
    **dict.fromkeys(
        ("get_referrers", "get_referents", "get_objects", "_current_frames"),
        "walks the interpreter's objects: the grader's references live there",
    ),
    # a red team read a tensor's memory from its C struct (x._cdata plus offsets) through ctypes
    "_cdata": "reads a tensor's memory through its C struct, past every watch the check keeps",
    # and another read and wrote it through x.data_ptr() with ctypes.cast and memmove, NumPy
    # doing the work between (compile-fused, profile-step, the Triton exercises on the CPU):
    # no exercise needs memory by address, so the module itself is out
    "ctypes": "reads and writes memory by its address, past every watch the check keeps",
    # a red team's child process started by the C function subprocess forks with (it raises no
    # audit event) summed a buffer it inherited; hogs were stopped through a pidfd (no event)
    **dict.fromkeys(
        ("_posixsubprocess", "fork_exec", "spawnv_passfds", "pidfd_send_signal", "pidfd_open"),
        "starts or signals another process, whose work the check cannot see or time",
    ),
}
# The grader's modules a learner's file has no use for, by their dotted path: named in an import,
# an attribute chain or a string (`importlib.import_module("gpulab.emulator.cupy_module")`). A red
# team emptied the emulator's record of the library's kernels (`_TRACE`) after `cupy.abs` did
# zip-add's work beside a one-element decoy kernel, and passed
MODULES = {
    "gpulab.emulator": "reaches the emulator's record of what ran in your call, which the check "
    "reads",
}
REACHING["__gpulab_trace__"] = MODULES["gpulab.emulator"]
# the same record through any function of the fake CuPy (`cupy.empty.__globals__["_TRACE"]`),
# and a module's globals under the grader's code in general
REACHING["__globals__"] = "reads a module's globals through one of its functions: the grader's "
REACHING["__globals__"] += "records and references live there"
# read as an attribute only (a learner's own variable may bear the name): the emulator's record
# reached through a module found by another road (`sys.modules[cupy.empty.__module__]._TRACE`)
# (the record is now a generator, `_SINK`, made by `_records`: the same speed bump for those)
ATTRIBUTES = dict.fromkeys(
    ("_TRACE", "ON_LAUNCH", "_SINK", "_records", "_FUSING"), MODULES["gpulab.emulator"]
)
# Names harmless alone but not beside the module they come from
_DYNAMO = "torch._dynamo.utils"
_FRAMES = "reads the callers' frames: the grader's references live there"
_FROM_MODULE = {
    (_DYNAMO, "counters"): f"edits dynamo's counters: {_GRADER}",
    # common words elsewhere (torch.stack), the frame walkers in inspect
    ("inspect", "stack"): _FRAMES,
    ("inspect", "trace"): _FRAMES,
}
# For a check that refuses a library's one-call answer: the exits its torch modes cannot see
EXITS = {
    "to_dlpack": "hands the tensor to another library through DLPack, past the check's watch",
    "_to_dlpack": "hands the tensor to another library through DLPack, past the check's watch",
    "_pickle_save": "serializes the tensor's storage past the check's watch",
}
# For a check that allows a list of operations (tree-reduction, the Triton exercises): a pointer
# (x.data_ptr(), which a Triton wrapper may ask for) turned into another library's array
POINTERS = dict.fromkeys(
    ("ctypeslib", "UnownedMemory", "from_buffer", "from_address", "frombuffer"),
    "turns a pointer into an array of another library's, past the check's watch",
)


def reaches_for_the_grader(
    source: str, *, refusing: bool = False, allowing: bool = False
) -> str | None:
    """One line naming the first such name and its line, or None. `refusing`: the check has a
    REFUSE table, so the exits past its modes count too. A file that does not parse is left to
    the load, which reports the syntax error."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    table = {**REACHING, **EXITS} if refusing else dict(REACHING)
    if allowing:
        table.update(POINTERS)
    hits = [
        (getattr(node, "lineno", 0), name, why)
        for node in ast.walk(tree)
        for name, why in _names(node, table)
    ]
    if not hits:
        return None
    line, name, why = min(hits)
    return f"line {line}: your code uses {name}, which {why}; leave it out"


def _names(node: ast.AST, table: dict[str, str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    ident = None
    if isinstance(node, ast.Attribute):
        ident = node.attr
        if ident in ATTRIBUTES:
            found.append((ident, ATTRIBUTES[ident]))
        why = _FROM_MODULE.get((dotted_name(node.value) or "", ident))
        if why:
            found.append((f"{dotted_name(node.value)}.{ident}", why))
    elif isinstance(node, ast.Name):
        ident = node.id
    elif isinstance(node, ast.Import):
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top in table:
                found.append((top, table[top]))
    elif isinstance(node, ast.ImportFrom):
        top = (node.module or "").split(".")[0]
        if top in table:
            found.append((top, table[top]))
        for alias in node.names:
            why = _FROM_MODULE.get((node.module or "", alias.name)) or table.get(alias.name)
            if why:
                found.append((alias.name, why))
    if ident is not None and ident in table:
        found.append((ident, table[ident]))
    found += _modules(node)
    return found


def _modules(node: ast.AST) -> list[tuple[str, str]]:
    """The grader's modules of MODULES that `node` names: imported, as an attribute chain
    (`gpulab.emulator.cupy_module`) or in a string that is a module's path."""
    paths: list[str] = []
    if isinstance(node, ast.Import):
        paths = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
        paths = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    elif isinstance(node, ast.Attribute):
        paths = [dotted_name(node) or ""]
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        paths = [node.value.strip()]
    return [
        (path, why)
        for path in paths
        for prefix, why in MODULES.items()
        if path == prefix or path.startswith(prefix + ".")
    ][:1]
