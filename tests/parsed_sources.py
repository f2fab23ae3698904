"""The package's source files parsed once a session: the import rules (test_imports.py) and the
house rules (test_house_rules.py) walk every file in several tests, and parsing them all costs
about half a second a pass on the CI box."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def tree(path: Path) -> ast.Module:
    """The parsed file, its lines those of str.splitlines, as the tests index them (they only
    read the tree, never change it)."""
    return ast.parse("\n".join(path.read_text(encoding="utf-8").splitlines()))
