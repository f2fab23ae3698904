"""`gpulab store`: check the progress file, or recover a damaged one (recover.py does the work)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpulab.core.doc_tags import tagged


def add_parser(sub: Any) -> None:
    """Register `gpulab store [check|recover] [--json]`."""
    store = sub.add_parser("store", help="check the progress file, or recover a damaged one")
    store.add_argument(
        "action",
        nargs="?",
        default="check",
        choices=("check", "recover"),
        help="check (default), or recover: copy the file aside and salvage what can be read",
    )
    store.add_argument("--json", action="store_true", help="print JSON")


def _emit(data: dict[str, Any]) -> None:
    print(json.dumps(tagged("store", data), indent=2))


def main(args: argparse.Namespace) -> int:
    """`gpulab store`: check the progress file, or recover the rows of a damaged one."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.store.connection import StoreError
    from gpulab.store.database import default_path
    from gpulab.store.recover import check, recover

    path = default_path()
    as_json = bool(getattr(args, "json", False))
    if getattr(args, "action", "check") == "recover":
        try:
            report = recover(path)
        except (StoreError, OSError) as exc:
            raise StoreError(f"cannot recover: {exc}") from None  # exit 1, one line
        if as_json:
            _emit(
                {
                    "action": "recover",
                    "path": str(path),
                    "kept_at": str(report.kept_at),
                    "rows": report.rows,
                    "unreadable": report.unreadable,
                }
            )
            return 0
        print(f"recovered {path}")
        for line in report.lines():
            print(f"  {line}")
        return 0
    problems = check(path)
    if as_json:
        _emit({"action": "check", "path": str(path), "exists": path.exists(), "problems": problems})
        return 1 if problems else 0
    if not path.exists():
        print(f"no progress saved yet ({path} does not exist)")
        return 0
    if not problems:
        print(f"{path}: ok")
        return 0
    print(f"{path} is damaged:")
    for line in problems:
        print(f"  {line}")
    print("run `gpulab store recover` to salvage what can be read (the file is copied aside)")
    return 1
