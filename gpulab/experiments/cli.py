"""`gpulab list`: the experiments and their parameters (from the registry; nothing runs)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpulab.core.doc_tags import tagged


def add_parser(sub: Any) -> None:
    """Register `gpulab list` on the subcommands."""
    lst = sub.add_parser("list", help="experiments and their parameters")
    lst.add_argument("--json", action="store_true", help="print JSON")


def main(args: argparse.Namespace) -> int:
    """Print the experiments and their parameters (text or JSON)."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.experiments.registry import all_experiments

    exps = all_experiments()
    if args.json:
        experiments = [e.describe() for e in exps.values()]
        print(json.dumps(tagged("list", {"experiments": experiments}), indent=2))
        return 0
    for exp in exps.values():
        print(f"{exp.id:<22} {exp.title}: {exp.summary}")
        for p in exp.params:
            default = ",".join(map(str, p.default)) if isinstance(p.default, list) else p.default
            print(f"    {p.name}={default}  ({p.allowed()}) {p.help}")
    return 0
