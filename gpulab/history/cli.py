"""`gpulab history`: the runs kept across sessions (TUI and `gpulab run`), on this machine and
imported from others: list, show, compare two, export, import.

Bad input (an unknown run id, a file that is not a history) exits 2 with one line; a database
that cannot be opened exits 1 with one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpulab.core.doc_tags import tagged
from gpulab.core.errors import BadInput
from gpulab.render.results import render_result, table


def add_parser(sub: Any) -> None:
    """Register `gpulab history [list|show|compare|export|import]` and its options."""
    h = sub.add_parser("history", help="runs kept across sessions: list, show, compare, export")
    h.add_argument("--json", action="store_true", help="print JSON")
    h.add_argument("--experiment", help="only this experiment's runs")
    h.add_argument("--limit", type=int, default=50, help="newest N runs (default 50)")
    verbs = h.add_subparsers(dest="history_command")
    show = verbs.add_parser("show", help="one run in full")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true", help="print JSON")
    cmp_ = verbs.add_parser("compare", help="two runs side by side, rows aligned")
    cmp_.add_argument("a", type=int)
    cmp_.add_argument("b", type=int)
    cmp_.add_argument("--json", action="store_true", help="print JSON")
    exp = verbs.add_parser("export", help="write the history as json, csv or md")
    exp.add_argument("--format", default="json", choices=("json", "csv", "md"))
    exp.add_argument("--output", help="file to write (default: standard output)")
    exp.add_argument("ids", nargs="*", type=int, help="only these runs")
    imp = verbs.add_parser("import", help="keep runs from an export or `gpulab run --json` output")
    imp.add_argument("file")


def main(args: argparse.Namespace) -> int:
    """Bad input raises BadInput (exit 2); a database that cannot be used, StoreError (exit 1)."""
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.store.database import Store

    with Store() as store:
        verb = getattr(args, "history_command", None)
        if verb == "show":
            return _show(store, args)
        if verb == "compare":
            return _compare(store, args)
        if verb == "export":
            return _export(store, args)
        if verb == "import":
            return _import(store, args)
        return _list(store, args)


def _when(iso: str | None) -> str:
    return (iso or "")[:16].replace("T", " ")


def _list(store: Any, args: argparse.Namespace) -> int:
    entries = store.run_entries(experiment=args.experiment, limit=max(1, args.limit))
    if args.json:
        keys: tuple[str, ...] = (
            "id",
            "experiment",
            "status",
            "verdict",
            "device",
            "host",
            "source",
        )
        keys += ("started_at", "headline", "params")
        runs = [{k: e.get(k) for k in keys} for e in entries]
        print(json.dumps(tagged("history", {"runs": runs}), indent=1, default=str))
        return 0
    if not entries:
        print("no runs kept yet: run an experiment (gpulab run montecarlo, or r in the TUI)")
        return 0

    rows = [
        [
            str(e["id"]),
            _when(e.get("started_at")),
            e["experiment"],
            str(e.get("device") or "?")[:28],
            str(e.get("host") or "")[:16],
            e.get("source") or "",
            e.get("status") if e.get("status") != "result" else e.get("verdict") or "-",
            e.get("headline") or "",
        ]
        for e in entries
    ]
    print(
        table(
            ["id", "started (UTC)", "experiment", "device", "host", "from", "verdict", "answer"],
            rows,
        )
    )
    return 0


def _one(store: Any, run_id: int) -> dict[str, Any] | None:
    found = store.run_entries([run_id])
    return found[0] if found else None


def _missing(run_id: int) -> BadInput:
    return BadInput(f"no run {run_id} in the history (gpulab history lists them)")


def _show(store: Any, args: argparse.Namespace) -> int:
    e = _one(store, args.id)
    if e is None:
        raise _missing(args.id)
    if args.json:
        print(json.dumps(tagged("history", e), indent=1, default=str))
        return 0
    print(render_entry(e))
    return 0


def render_entry(e: dict[str, Any]) -> str:
    """A kept run as text: where and when, its rows as the CLI prints them, its answer last."""

    lines = [
        f"run {e.get('id', '?')}: {e['experiment']} · {e.get('status')} · from {e.get('source')}"
        f" on {e.get('host') or '?'} · {_when(e.get('started_at'))} UTC",
        "params: " + ", ".join(f"{k}={v}" for k, v in (e.get("params") or {}).items()),
        "versions: " + ", ".join(f"{k} {v}" for k, v in (e.get("versions") or {}).items()),
        "calibration: " + _calibration(e.get("calibration") or {}),
        "during the run: " + _telemetry(e.get("telemetry") or {}),
    ]
    if e.get("failure"):
        lines.append(f"{e['failure'].get('kind')}: {e['failure'].get('message')}")
    result = {
        "record": {"experiment": e["experiment"], "device": e.get("device")},
        "measurements": e.get("rows") or [],
        "verdicts": e.get("verdicts") or [],
        "unavailable": e.get("unavailable") or {},
        "summary": e.get("summary") or {},
        "headline": e.get("headline") or "",
    }
    lines.append(render_result(result))
    return "\n".join(lines)


def _calibration(c: dict[str, Any]) -> str:
    parts = []
    for tag in ("gpu", "cpu"):
        p = c.get(tag)
        if p:
            tflops = ", ".join(f"{d} {v:.3g}" for d, v in (p.get("matmul_tflops") or {}).items())
            copy = p.get("copy_gbs")
            parts.append(
                f"{p.get('device', tag)}: copy {copy:.3g} GB/s" if copy else str(p.get("device"))
            )
            if tflops:
                parts[-1] += f", matmul TFLOP/s {tflops}"
    return "; ".join(parts) or str(c.get("reason") or "unknown")


def _telemetry(t: dict[str, Any]) -> str:
    parts = []
    units = {"sm_clock_mhz": "MHz SM clock", "temperature_c": "°C", "power_w": "W"}
    for name, unit in units.items():
        v = t.get(name)
        if v:
            parts.append(f"{v['min']:.0f}-{v['max']:.0f} {unit}")
    reasons = set((t.get("reasons") or {}).values())
    if not parts:
        return "not known: " + ("; ".join(sorted(reasons)) or "no telemetry")
    return ", ".join(parts)


def _compare(store: Any, args: argparse.Namespace) -> int:
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.entries import compare, render_compare

    a, b = _one(store, args.a), _one(store, args.b)
    if a is None:
        raise _missing(args.a)
    if b is None:
        raise _missing(args.b)
    c = compare(a, b)
    print(
        json.dumps(tagged("history", c), indent=1, default=str) if args.json else render_compare(c)
    )
    return 0


def _export(store: Any, args: argparse.Namespace) -> int:
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.transfer import export

    entries = store.run_entries(args.ids or None, limit=10**9)
    missing = sorted(set(args.ids) - {e["id"] for e in entries})
    if missing:
        raise _missing(missing[0])
    text = export(entries, args.format)
    if not args.output:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return 0
    try:
        Path(args.output).write_text(text)
    except OSError as exc:
        raise BadInput(f"cannot write {args.output}: {exc.strerror or exc}") from None
    sys.stderr.write(f"gpulab: wrote {len(entries)} runs to {args.output}\n")
    return 0


def _import(store: Any, args: argparse.Namespace) -> int:
    # deferred: the command's work loads when it runs, not at every gpulab start
    from gpulab.history.entries import save
    from gpulab.history.transfer import as_imported, parse
    from gpulab.store.connection import StoreError

    path = Path(args.file)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(
            f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    entries = as_imported(parse(text, path.name), path.name)  # NotAHistory: exit 2

    try:
        ids = [save(e, store) for e in entries]
    except StoreError as exc:
        raise StoreError(f"nothing more was imported: {exc}") from None
    span = f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"
    print(f"imported {len(ids)} runs from {path.name} as {span} (gpulab history compare A B)")
    return 0
