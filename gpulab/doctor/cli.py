"""`gpulab doctor [--json]`: one line per check (✓ ok, ! warning, ✗ broken, - skipped), each
problem with the command that fixes it. Exit 1 when something is broken; CPU mode is not broken.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpulab.core.doc_tags import tagged
from gpulab.doctor import checks as ck

MARKS = {ck.OK: "✓", ck.WARN: "!", ck.FAIL: "✗", ck.SKIP: "-"}
ASCII_MARKS = {ck.OK: "ok", ck.WARN: "!", ck.FAIL: "X", ck.SKIP: "-"}


def add_parser(sub: Any) -> None:
    """Register `gpulab doctor` on the subcommands."""
    doctor = sub.add_parser("doctor", help="check this machine's GPU setup and say how to fix it")
    doctor.add_argument("--json", action="store_true", help="print JSON")


def _marks() -> dict[str, str]:
    try:
        "✓✗".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ASCII_MARKS
    return MARKS


def report(facts: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: every check, CPU mode and why, and whether anything is broken."""
    results = ck.evaluate(facts)
    reasons = ck.cpu_mode(facts)
    return tagged(
        "doctor",
        {
            "ok": not ck.broken(results),
            "cpu_mode": bool(reasons),
            "cpu_mode_reasons": reasons,
            "checks": [c.to_dict() for c in results],
        },
    )


def render(doc: dict[str, Any]) -> list[str]:
    """The checks as text lines, each marked with its status."""
    marks = _marks()
    width = max(len(c["title"]) for c in doc["checks"])
    lines = []
    for c in doc["checks"]:
        lines.append(f"{marks[c['status']]} {c['title']:<{width}}  {c['message']}")
        if c["fix"] and c["status"] in (ck.WARN, ck.FAIL):
            lines.append(f"  {'':<{width}}  fix: {c['fix']}")
    if doc["cpu_mode"]:
        lines.append("CPU mode: " + "; ".join(doc["cpu_mode_reasons"]))
        lines.append("Nothing is broken: experiments run on the CPU; GPU checks were skipped.")
    failed = [c["title"] for c in doc["checks"] if c["status"] == ck.FAIL]
    if failed:
        lines.append(f"broken: {', '.join(failed)} (fixes above)")
    elif not doc["cpu_mode"]:
        warns = sum(c["status"] == ck.WARN for c in doc["checks"])
        lines.append(f"nothing broken; {warns} warning(s)" if warns else "all good")
    return lines


def main(args: argparse.Namespace) -> int:
    """Run `gpulab doctor`; exit status 1 when a check failed."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.doctor import gather

    if not getattr(args, "json", False):
        sys.stderr.write("gpulab doctor: starting a worker and a GPU probe ...\n")
    doc = report(gather.gather())
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=2, default=str))
    else:
        print("\n".join(render(doc)))
    return 0 if doc["ok"] else 1
