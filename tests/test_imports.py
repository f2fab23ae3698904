"""The layering rules of docs/architecture.md, checked in fresh interpreters."""

import ast
import pathlib
import subprocess
import sys

import parsed_sources
import pytest

HEADLESS = [
    "gpulab.core",
    "gpulab.core.params",
    "gpulab.core.results",
    "gpulab.core.timing",
    "gpulab.core.devices",
    "gpulab.experiments",
    "gpulab.experiments.registry",
    "gpulab.runner",
    "gpulab.telemetry",
    "gpulab.lessons",
    "gpulab.cli",
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_layers_never_import_textual(module):
    mods = _modules_after(f"import {module}")
    assert "textual" not in mods, f"{module} pulled in textual"


def test_registry_loads_without_torch_or_cupy():
    mods = _modules_after(
        "from gpulab.experiments.registry import all_experiments\nall_experiments()"
    )
    assert "torch" not in mods and "cupy" not in mods


def test_app_never_imports_torch_or_cupy():
    mods = _modules_after("import gpulab.app\nfrom gpulab.app.app import GpuLabApp")
    assert "textual" in mods
    assert "torch" not in mods, "the UI process imported torch"
    assert "cupy" not in mods, "the UI process imported cupy"


def test_no_textual_import_outside_app():
    import re

    root = pathlib.Path(__file__).resolve().parents[1] / "gpulab"
    offenders = []
    for path in root.rglob("*.py"):
        if "app" in path.relative_to(root).parts[:1]:
            continue
        if re.search(r"^\s*(from|import)\s+textual\b", path.read_text(), re.M):
            offenders.append(str(path))
    assert not offenders


# ---------------------------------------------------------------------------- the import graph
# Built from the source with ast: every `import` and `from ... import` of every module under
# gpulab/, at module level and inside functions alike (an import inside a function is an edge
# the moment it runs). `from pkg import name` is an edge to `pkg.name` when that is a module.

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpulab"
# Heavy or optional third-party packages an import inside a function may defer without a word:
# their names say why (seconds of import, a GPU runtime, the UI toolkit, an extra).
HEAVY = {
    "torch", "cupy", "cupyx", "numpy", "scipy", "PIL", "textual", "textual_serve", "pynvml",
    "nvidia", "tree_sitter", "tree_sitter_cuda", "shtab",
}  # fmt: skip


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Module name -> (file, is a package), for every importable module under gpulab/ (not the
    exercise folders' learner code nor the lessons' content)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[:3] == ["gpulab", "exercises", "catalog"] or "content" in parts:
            continue
        is_pkg = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return found


def _imports(name: str, path: pathlib.Path, is_pkg: bool, known: set[str]):
    """(imported gpulab module, the ast node, inside a function) for each import in one file."""
    tree = parsed_sources.tree(path)
    inner = {
        id(node)
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(fn)
    }
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_pkg else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([node.module] if node.module else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in targets:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                yield target, node, id(node) in inner


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: {t for t, _, _ in _imports(name, path, is_pkg, known)}
        for name, (path, is_pkg) in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _one_cycle(graph: dict[str, set[str]], component: list[str]) -> str:
    """A path around the component, a -> b -> ... -> a, for the failure message."""
    members = set(component)
    path = [component[0]]
    while True:
        nxt = sorted(graph[path[-1]] & members)
        step = next((m for m in nxt if m not in path), None) or next(m for m in nxt if m in path)
        if step in path:
            return " -> ".join(path[path.index(step) :] + [step])
        path.append(step)


def test_no_import_cycles():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_one_cycle(graph, c) for c in found)


def test_the_cycle_finder_finds_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert _one_cycle(graph, ["a", "b", "c"]) == "a -> b -> c -> a"


# The layers of docs/architecture.md, lowest first: a package imports only from the layers below
# its own (and from itself). `gpulab` itself (its __init__: the version) sits under them all.
LAYERS: list[set[str]] = [
    {"gpulab"},
    {"emulator"},
    {"core"},
    {"render", "telemetry"},
    {"experiments", "store"},
    {"history", "lessons"},
    {"exercises"},
    {"runner"},
    {"ex"},
    {"benchmark", "doctor", "explain", "serve"},
    {"testing"},
    {"app"},
    {"completion"},
    {"cli"},
    {"__main__"},
]
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_packages_import_only_the_layers_below_them():
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    graph = import_graph()
    assert {_layer_of(m) for m in graph} <= set(rank), "a package missing from LAYERS"
    wrong = sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if _layer_of(a) != _layer_of(b)
        and rank[_layer_of(b)] >= rank[_layer_of(a)]
        and (_layer_of(a), _layer_of(b)) not in ALLOWED_UPWARD
    )
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_imports_inside_functions_say_why():
    """An import inside a function defers a heavy dependency (HEAVY), or says why on its line
    or in the comment just above it (`deferred: ...`), in every module of the package."""
    silent = []
    for path, _ in _modules().values():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = parsed_sources.tree(path)
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                top = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if not getattr(node, "level", 0) and (top or "").split(".")[0] in HEAVY:
                    continue
                i = node.lineno - 1
                said = "deferred" in lines[i]
                while not said and i > 0:
                    i -= 1
                    text = lines[i].strip()
                    if text.startswith("#"):
                        said = "deferred" in text
                    elif text and not text.startswith(("from ", "import ")) and text != ")":
                        break
                if not said:
                    silent.append(
                        f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}"
                    )
    assert not silent, "imports inside functions without a reason:\n" + "\n".join(silent)


def test_packages_hold_no_reexports_and_no_module_getattr():
    """A package's __init__.py is its docstring (gpulab's also holds the version; the app's
    applies its Textual fixes first); no module answers names through `__getattr__`."""
    allowed = {"gpulab/__init__.py", "gpulab/app/__init__.py"}
    offenders = []
    for path, is_pkg in _modules().values():
        tree = parsed_sources.tree(path)
        rel = str(path.relative_to(ROOT))
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            offenders.append(f"{rel}: module __getattr__")
        body = [n for n in tree.body if not isinstance(n, ast.Expr)]  # the docstring
        if is_pkg and body and rel not in allowed:
            offenders.append(f"{rel}: more than a docstring")
    assert not offenders, offenders


def test_the_top_of_the_package_is_small():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 8, loose


def test_the_exercise_check_registers_itself_by_import():
    """The registry names no module of a layer above it; importing the job registers it."""
    registry = (PACKAGE / "experiments" / "registry.py").read_text(encoding="utf-8")
    assert "gpulab.exercises" not in registry
    from gpulab.exercises import job
    from gpulab.experiments.registry import all_experiments, get

    assert get(job.EXPERIMENT_ID) is job.EXPERIMENT
    assert job.EXPERIMENT_ID not in all_experiments()  # hidden: listed nowhere
