"""The expert solutions against the teaching references, through a warm worker (as `gpulab ex
check` runs them): where each kernel exercise's `expert:` figure and gold come from.

    python -m gpulab.benchmark.experts --out experts.json [--seeds 3] [--only matmul-tiled]
        [--candidate matmul-tiled=path/to/another.py]

For every exercise with an expert.py: the reference and the expert are each checked with
`--seeds` fresh seeds (every check is the whole check: cases, guards, the timed calls each
checked), and the median fraction of this GPU's calibrated ceiling is kept, with its min and
max. The anchor it prints is that median, and gold is EXPERT_GOLD of it (schema.gold_for).
Run it on an H100 to re-anchor the statements; on another GPU it shows how far the same
fractions carry there. `--candidate` measures another file in the same run (a kernel that may
replace the expert), under "candidates".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gpulab.core.devices import Inventory
from gpulab.ex.session import Checker
from gpulab.exercises.exercise_format import gold_for
from gpulab.exercises.loader import load_catalog

SEED = 20261126


def experts_part(
    seeds: int = 3,
    only: list[str] | None = None,
    device: int = 0,
    candidates: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """{device, exercises: [{exercise, reference: {...}, expert: {...}, anchor, gold}]}."""
    return asyncio.run(_run(max(1, seeds), only or [], device, candidates or {}))


def _summary(results: list[tuple[Any, float]]) -> dict[str, Any]:
    got = [(r.timing or {}).get("fraction") for r, _ in results if r.passed]
    rates = [((r.timing or {}).get("learner") or {}).get("value") for r, _ in results if r.passed]
    fractions: list[float] = [float(f) for f in got if f is not None]
    values: list[float] = [float(v) for v in rates if v is not None]
    timing = next((r.timing for r, _ in results if r.timing), None) or {}
    return {
        "passed": all(r.passed for r, _ in results),
        "messages": [r.message for r, _ in results if not r.passed],
        "grades": [r.grade for r, _ in results],
        "fractions": fractions,
        "fraction": statistics.median(fractions) if fractions else None,
        "fraction_min": min(fractions) if fractions else None,
        "fraction_max": max(fractions) if fractions else None,
        "value": statistics.median(values) if values else None,
        "metric": timing.get("metric"),
        "library_fraction": timing.get("library_fraction"),
        "ceiling": (timing.get("ceiling") or {}).get("value"),
        "device_state": timing.get("device_state"),
        "check_s": [round(s, 3) for _, s in results],
    }


async def _run(
    seeds: int, only: list[str], device: int, candidates: dict[str, list[str]]
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    async with Checker(device=device) as checker:
        hello = await checker.client.wait_ready(600)
        inv = Inventory.from_dict(hello["inventory"])
        for ex in load_catalog():
            if not ex.has_expert or (only and ex.id not in only):
                continue
            why = ex.unavailable(inv)
            if why:
                rows.append({"exercise": ex.id, "skipped": why})
                continue
            sys.stderr.write(f"  {ex.id}\n")
            row: dict[str, Any] = {"exercise": ex.id, "order": ex.order, "grades": dict(ex.grades)}
            for who, path in (("reference", ex.solution_path), ("expert", ex.expert_path)):
                got = [await checker.check(ex, path, SEED + k) for k in range(seeds)]
                row[who] = _summary(got)
            for other in candidates.get(ex.id, []):
                got = [await checker.check(ex, Path(other), SEED + k) for k in range(seeds)]
                row.setdefault("candidates", {})[other] = _summary(got)
            fraction = row["expert"]["fraction"]
            row["anchor"] = round(fraction, 2) if fraction is not None else None
            row["gold"] = gold_for(row["anchor"]) if row["anchor"] else None
            rows.append(row)
    return {
        "device": inv.label(),
        "when": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "seeds": seeds,
        "exercises": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpulab.benchmark.experts", description=__doc__)
    p.add_argument("--out", help="write the JSON here")
    p.add_argument("--seeds", type=int, default=3, help="checks of each solution (default 3)")
    p.add_argument("--only", action="append", help="this exercise id (repeatable)")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--candidate", action="append", default=[], help="ID=PATH: measure it too")
    args = p.parse_args(argv)
    candidates: dict[str, list[str]] = {}
    for item in args.candidate:
        ex_id, _, path = item.partition("=")
        candidates.setdefault(ex_id, []).append(path)
    report = experts_part(args.seeds, args.only, args.device, candidates)
    text = json.dumps(report, indent=1, default=str)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"{report['device']}:")
    for row in report["exercises"]:
        if "skipped" in row:
            print(f"  {row['exercise']}: not run: {row['skipped']}")
            continue
        ref, exp = row["reference"], row["expert"]

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{100 * v:.0f}%"

        print(
            f"  {row['exercise']}: reference {pct(ref['fraction'])} {ref['grades']}, expert "
            f"{pct(exp['fraction'])} [{pct(exp['fraction_min'])}..{pct(exp['fraction_max'])}] "
            f"{exp['grades']} -> expert: {row['anchor']}, gold {row['gold']}"
            + (
                ""
                if ref["passed"] and exp["passed"]
                else f"  FAIL {ref['messages'] + exp['messages']}"
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
