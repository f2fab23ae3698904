"""`gpulab bench`: the suite's flags, the run (suite.py) and where its JSON and Markdown go."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gpulab.core import datadir
from gpulab.core.doc_tags import tagged
from gpulab.core.errors import BadInput


def add_parser(sub: Any) -> None:
    """Register `gpulab bench` on the subcommands."""
    bench = sub.add_parser("bench", help="run the benchmark suite, write JSON and Markdown")
    bench.add_argument(
        "--suite",
        default="core",
        help="core (default), full, exercises, multi-gpu or cli (`gpulab ex check` from the shell)",
    )
    bench.add_argument("--json", dest="json_path", help="write the JSON results here")
    bench.add_argument("--markdown", dest="md_path", help="write the Markdown table here")
    bench.add_argument(
        "--only", action="append", default=[], help="run just these experiments (a,b or repeated)"
    )
    bench.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="exercises: check each reference (and expert) solution this many times in a row "
        "(default 3)",
    )
    bench.add_argument(
        "--exercise",
        action="append",
        default=[],
        help="exercises: just these exercise ids (a,b or repeated), e.g. to split the suite "
        "over GPUs",
    )
    bench.add_argument(
        "--soak",
        type=int,
        default=0,
        help="exercises: then check every GPU exercise's reference this many times more with a "
        "CPU core kept busy (opt-in, long)",
    )
    bench.add_argument(
        "--soak-only",
        action="store_true",
        help="exercises: the soak alone (with --soak N), no wrong/, right/ or repeat checks",
    )


def main(args: argparse.Namespace) -> int:
    """Run `gpulab bench`: the suite, then JSON and Markdown reports."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.benchmark.markdown import markdown
    from gpulab.benchmark.suite import SUITES, default_paths, device_slug, run_bench
    from gpulab.core.results import json_safe
    from gpulab.experiments.registry import all_experiments

    datadir.require()  # found before minutes of work, not after
    suite = getattr(args, "suite", "core") or "core"
    if suite not in SUITES:
        raise BadInput(f"unknown suite {suite!r}; expected {', '.join(SUITES)}")
    # --only a --only b, or --only a,b (both spellings, as the docs use either)
    only = [o.strip() for arg in getattr(args, "only", []) or [] for o in arg.split(",")]
    only = [o for o in only if o]
    unknown = [o for o in only if o not in all_experiments()]
    if unknown:
        raise BadInput(f"unknown experiment(s) for --only: {', '.join(unknown)}")
    exercises = [o.strip() for arg in getattr(args, "exercise", []) or [] for o in arg.split(",")]
    exercises = [o for o in exercises if o]
    if exercises:
        from gpulab.exercises.loader import load_catalog  # deferred: read when the flag is used

        known = load_catalog().ids()
        bad = [e for e in exercises if e not in known]
        if bad:
            raise BadInput(f"unknown exercise(s) for --exercise: {', '.join(bad)}")
    soak = int(getattr(args, "soak", 0) or 0)
    if soak < 0:
        raise BadInput(f"--soak {soak}: a number of checks, 0 or more")
    soak_only = bool(getattr(args, "soak_only", False))
    if soak_only and (soak < 1 or suite != "exercises"):
        raise BadInput("--soak-only: with --suite exercises and --soak N (N checks of each)")
    quick = bool(getattr(args, "quick", False))
    repeat = int(getattr(args, "repeat", 3) or 3)
    if repeat < 2:
        raise BadInput(f"--repeat {repeat}: at least 2 (the first and a repeat check)")
    paths: list[Path] = []

    def write(report: dict[str, Any]) -> None:
        if not paths:
            slug = device_slug(report["device"], report["peaks"]["cpu"])
            json_default, md_default = default_paths(suite, slug)
            paths.append(Path(getattr(args, "json_path", None) or json_default))
            paths.append(Path(getattr(args, "md_path", None) or md_default))
            for path in paths:
                path.parent.mkdir(parents=True, exist_ok=True)
        clean = tagged("bench", json_safe(report))
        paths[0].write_text(json.dumps(clean, indent=2))
        paths[1].write_text(markdown(clean))

    report = json_safe(
        run_bench(
            suite,
            only,
            quick,
            on_run=write,
            repeat=repeat,
            exercises=exercises,
            soak=soak,
            soak_only=soak_only,
        )
    )
    write(report)
    json_path, md_path = paths
    print(f"device: {report['device']}")
    for c in report["comparisons"]:
        value = "-" if c.get("value") is None else f"{c['value']:.4g}"
        print(f"  {c['status']:<7} {c['name']}: {value} (target {c['target']})")
    failed = [r for r in report["runs"] if r["status"] != "result"]
    for r in failed:
        f = r.get("failure", {})
        print(f"  FAILED  {r['experiment']}: {f.get('kind')}: {f.get('message')}")
    print(f"wrote {json_path} and {md_path}")
    return 1 if failed else 0
