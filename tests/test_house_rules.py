"""Rules of the house that no linter checks: a reason on every broad except, one error exit for
bad input, one JSON-cleaning function, no comments pointing at files or trackers outside the
repository."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import parsed_sources

ROOT = Path(__file__).resolve().parents[1]
# The exercises' catalog holds learner-facing solutions and checks, not the lab's own code.
OWNED_ELSEWHERE = ("gpulab/exercises/catalog/",)


def _sources() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    names = out.stdout.split() if out.returncode == 0 else []
    paths = [ROOT / n for n in names] or list(ROOT.rglob("*.py"))
    return [p for p in paths if "__snapshots__" not in p.parts and p.exists()]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_every_broad_except_says_why():
    """`except Exception` / `BaseException` / a bare `except:` carries a comment on its line:
    `# noqa: BLE001 - <why>` where ruff's BLE001 asks, else the reason itself."""
    silent = []
    for path in _sources():
        rel = _rel(path)
        if rel.startswith(OWNED_ELSEWHERE):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(parsed_sources.tree(path)):
            if not isinstance(node, ast.ExceptHandler):
                continue
            broad = node.type is None or (
                isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException")
            )
            line = lines[node.lineno - 1]
            comment = line.split("#", 1)[1].strip() if "#" in line else ""
            if broad and (not comment or re.fullmatch(r"noqa: BLE001\s*", comment)):
                silent.append(f"{rel}:{node.lineno}: {line.strip()}")
    assert not silent, "broad excepts without a reason:\n" + "\n".join(silent)


def test_one_exit_status_and_one_json_cleaner():
    defined = []
    cleaners = []
    for path in _sources():
        rel = _rel(path)
        if not rel.startswith("gpulab/"):
            continue
        tree = parsed_sources.tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                if "EXIT_BAD_INPUT" in names:
                    defined.append(rel)
            if isinstance(node, ast.FunctionDef) and node.name in ("_clean", "clean", "json_safe"):
                cleaners.append(f"{rel}: {node.name}")
    assert defined == ["gpulab/core/errors.py"], defined
    assert cleaners == ["gpulab/core/results.py: json_safe"], cleaners


def test_no_comment_points_outside_the_repository():
    """No design notes that are not here (a METHOD file), no tracker numbers ("issue" and a number): a
    comment says the reason itself."""
    method = "METHOD" + r"\.md|METHOD" + "'s"
    tracker = r"\bissues? #?\d+"
    pattern = re.compile(f"{method}|{tracker}", re.I)
    docs = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    offenders = []
    for path in [*_sources(), *docs]:
        rel = _rel(path)
        if rel.startswith(OWNED_ELSEWHERE):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not offenders, offenders


# Learner-facing code (exercise folders) and lesson text follow their own format, not this rule.
DOCSTRINGS_EXEMPT = ("gpulab/exercises/catalog/", "gpulab/lessons/content/")
DOCSTRING_SHARE = 0.80


def _is_accessor(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A property's setter or deleter, or an @overload stub: the main definition carries the doc."""
    for d in node.decorator_list:
        if isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter"):
            return True
        if (isinstance(d, ast.Name) and d.id == "overload") or (
            isinstance(d, ast.Attribute) and d.attr == "overload"
        ):
            return True
    return False


def _public_definitions(tree: ast.Module) -> list[tuple[str, bool]]:
    """(qualified name, has a docstring) for every public class and function at module level and
    in classes (methods and nested classes too; not functions inside functions)."""
    out: list[tuple[str, bool]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if node.name.startswith("_"):
                continue
            if isinstance(node, ast.ClassDef):
                out.append((prefix + node.name, ast.get_docstring(node) is not None))
                visit(node.body, f"{prefix}{node.name}.")
            elif not _is_accessor(node):
                out.append((prefix + node.name, ast.get_docstring(node) is not None))

    visit(tree.body, "")
    return out


def test_public_functions_and_classes_have_docstrings():
    """At least DOCSTRING_SHARE of gpulab's public functions and classes carry a docstring."""
    per_module: dict[str, tuple[int, int, list[str]]] = {}
    for path in _sources():
        rel = _rel(path)
        if not rel.startswith("gpulab/") or rel.startswith(DOCSTRINGS_EXEMPT):
            continue
        defs = _public_definitions(parsed_sources.tree(path))
        if defs:
            missing = [name for name, documented in defs if not documented]
            per_module[rel] = (len(defs) - len(missing), len(defs), missing)
    documented = sum(d for d, _, _ in per_module.values())
    total = sum(t for _, t, _ in per_module.values())
    assert total > 100, f"only {total} public definitions found: is the walk broken?"
    share = documented / total
    worst = sorted(per_module.items(), key=lambda kv: (kv[1][0] - kv[1][1], kv[0]))[:15]
    report = "\n".join(
        f"  {rel}: {d}/{t} documented; missing {', '.join(missing[:8])}"
        + (" ..." if len(missing) > 8 else "")
        for rel, (d, t, missing) in worst
        if missing
    )
    assert share >= DOCSTRING_SHARE, (
        f"{documented}/{total} = {share:.1%} of public functions and classes have a docstring "
        f"(at least {DOCSTRING_SHARE:.0%} wanted); the modules missing the most:\n{report}"
    )


def test_every_type_ignore_names_its_code_and_says_why():
    """`# type: ignore[code]  # why`: the code mypy would report, and the reason, on its line."""
    bare = []
    for path in _sources():
        rel = _rel(path)
        if not rel.startswith("gpulab/") or "/catalog/" in rel:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "type: ignore" in line and not re.search(r"type: ignore\[[\w,-]+\]\s+#\s*\S", line):
                bare.append(f"{rel}:{n}: {line.strip()}")
    assert not bare, "type: ignore without a code and a reason:\n" + "\n".join(bare)
