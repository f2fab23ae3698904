"""`gpulab predictions [--json]`: the predictions you made, each beside its measurement, and how
well calibrated they are becoming (gpulab.history.predictions says how that is counted).

Predictions are made with `gpulab run --predict`, `gpulab ex check --predict`, the TUI's
prediction fields and the lessons' measured quiz questions. A store that cannot be read is one
line and exit 1.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpulab.core.doc_tags import tagged

LIMIT = 50


def add_parser(sub: Any) -> None:
    """Register `gpulab predictions` and its options."""
    p = sub.add_parser("predictions", help="your predictions beside the measurements")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--limit", type=int, default=LIMIT, help=f"the last N (default {LIMIT})")


def main(args: argparse.Namespace) -> int:
    """List the kept predictions, newest last, and the calibration under them."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.predictions import Predictions, show_value
    from gpulab.store.database import Store

    with Store() as st:
        kept = Predictions(st)
        rows, cal = kept.all(limit=max(1, int(args.limit))), kept.calibration()
    if args.json:
        doc = {"predictions": [p.to_dict() for p in rows], "calibration": cal.to_dict()}
        print(json.dumps(tagged("predictions", doc), indent=1, default=str))
        return 0
    if not rows:
        print("No predictions yet: `gpulab run EXPERIMENT --predict 2ms`, `gpulab ex check NAME")
        print("--predict 40%`, the TUI's prediction fields, or a lesson's measured quiz question.")
        return 0
    print(f"{'when':<17} {'what':<34} {'predicted':>12} {'measured':>12}  result")
    for p in rows:
        if p.measured is None:
            verdict = "not measured"
        elif p.off is not None:
            verdict = "within 10%" if p.off < 1.1 else f"{p.off:.3g}x off"
        else:
            verdict = "right" if p.right else "wrong"
        what = f"{p.kind} {p.subject}"[:34]
        print(
            f"{p.predicted_at[:16].replace('T', ' '):<17} {what:<34} "
            f"{show_value(p.quantity, p.predicted)[:12]:>12} "
            f"{show_value(p.quantity, p.measured)[:12]:>12}  {verdict}"
        )
    print(cal.words())
    return 0
