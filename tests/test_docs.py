"""The README and docs/: self-contained (no links outside the repository, every relative link
resolves), the set-up commands CI runs, every command listed, and the screenshot's defaults true."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from gpulab.cli import build_parser
from gpulab.core.params import parse_plain_number

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_docs() -> list[Path]:
    """Markdown files git tracks (every .md under the root, where there is no git)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        names = out.stdout.split() if out.returncode == 0 else []
    except OSError:
        names = []
    if not names:
        return [p for p in ROOT.rglob("*.md") if ".git" not in p.parts]
    return [ROOT / n for n in names]


def test_no_doc_points_outside_the_repository():
    docs = tracked_docs()
    assert README in docs and ROOT / "docs" / "architecture.md" in docs
    offenders = []
    for path in docs:
        text = path.read_text(encoding="utf-8")
        for pattern in ("../shared", "/work/shared", "shared/DESIGN", "shared/METHOD"):
            if pattern in text:
                offenders.append(f"{path.relative_to(ROOT)}: {pattern}")
        for target in LINK.findall(text):
            # Web links, anchors and the lessons' own schemes (experiment:, lesson:) are not files.
            if target.startswith("#") or re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            resolved = (path.parent / target.split("#")[0]).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                offenders.append(f"{path.relative_to(ROOT)}: link {target}")
    assert not offenders, offenders


def test_readme_keeps_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert "```bash\npip install -e . && gpulab\n```" in text
    assert '```bash\npip install -e ".[test]" && python -m pytest\n```' in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -e ".[test]" && python3 -m pytest' in ci


def test_readme_lists_every_command():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = README.read_text(encoding="utf-8")
    missing = [name for name in sub.choices if f"`gpulab {name}" not in text]
    assert not missing, f"README's command table lacks {missing}"


def _screenshot() -> str:
    text = README.read_text(encoding="utf-8")
    block = text.split("```\n", 2)[1]
    assert "gpulab" in block and "Monte Carlo pi" in block, "the first block is the screenshot"
    return block


@pytest.mark.parametrize("name", ["samples", "seed"])
def test_screenshot_shows_the_apps_defaults(name):
    from gpulab.experiments.registry import get

    defaults = {p.name: p.default for p in get("montecarlo").params}
    shown = re.search(rf"│ {name}\s+(\S+)\s", _screenshot())
    assert shown, f"the screenshot has no {name} field"
    assert parse_plain_number(shown.group(1)) == defaults[name]
