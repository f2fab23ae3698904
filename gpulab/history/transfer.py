"""History to and from files: export as JSON, CSV or Markdown; import any of them, or the
output of `gpulab run --json` (one event per line), from this machine or another one.

Every format round-trips the entries' rows, params, headline, device, calibration and
telemetry: JSON keeps the entries whole; CSV has one line per row with the run's fields
repeated (JSON in the params/summary/calibration/telemetry/versions columns); Markdown has one
section per run, its fields as `- name: value` lines and its rows as a table.
A file that is none of these raises `NotAHistory` with one line saying why.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any

from gpulab.core import events as ev
from gpulab.core.doc_tags import KEY as SCHEMA_KEY
from gpulab.core.doc_tags import tagged
from gpulab.core.errors import BadInput
from gpulab.history.entries import FORMAT, entry, no_telemetry, verdict_of

EXPORT_FORMAT = "gpulab-history"
FORMATS = ("json", "csv", "md")
STATUSES = (ev.RESULT, ev.FAILED, ev.CANCELLED)
ROW_FIELDS = (
    "contender",
    "size",
    "dtype",
    "time_median_s",
    "time_min_s",
    "time_max_s",
    "runs",
    "throughput",
    "unit",
    "percent_of_peak",
    "extrapolated",
)
NUMERIC = {"time_median_s", "time_min_s", "time_max_s", "throughput", "percent_of_peak"}
RUN_TEXT = (
    "id",
    "experiment",
    "status",
    "source",
    "host",
    "device",
    "started_at",
    "finished_at",
    "verdict",
    "headline",
)
RUN_JSON = ("params", "summary", "versions", "calibration", "telemetry", "failure")


class NotAHistory(BadInput, ValueError):
    """A file `gpulab history import` cannot read as runs; str() is one line for a person."""


# ---- export ----------------------------------------------------------------------------------


def export(entries: list[dict[str, Any]], fmt: str) -> str:
    """Kept runs as JSON, CSV or Markdown text; ValueError for another format."""
    if fmt == "json":
        doc = {"format": EXPORT_FORMAT, "version": 1, "runs": entries}
        return json.dumps(tagged("history", doc), indent=1)
    if fmt == "csv":
        return _to_csv(entries)
    if fmt == "md":
        return _to_md(entries)
    raise ValueError(f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _to_csv(entries: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([*RUN_TEXT, *RUN_JSON, *ROW_FIELDS])
    for e in entries:
        head = [_cell(e.get(k)) for k in RUN_TEXT]
        head += [json.dumps(e.get(k), default=str) for k in RUN_JSON]
        for r in e.get("rows") or [None]:
            w.writerow(head + [_cell((r or {}).get(k)) if r else "" for k in ROW_FIELDS])
    return out.getvalue()


def _md_cell(value: Any) -> str:
    return _cell(value).replace("|", "\\|")


def _to_md(entries: list[dict[str, Any]]) -> str:
    parts = ["# gpulab history", ""]
    for e in entries:
        parts.append(f"## Run {e.get('id', '')}: {e.get('experiment')} on {e.get('device')}")
        parts.append("")
        for k in RUN_TEXT:
            if k not in ("id", "experiment"):
                parts.append(f"- {k}: {_cell(e.get(k))}")
        for k in RUN_JSON:
            parts.append(f"- {k}: `{json.dumps(e.get(k), default=str)}`")
        parts.append("")
        if e.get("rows"):
            parts.append("| " + " | ".join(ROW_FIELDS) + " |")
            parts.append("|" + "---|" * len(ROW_FIELDS))
            for r in e["rows"]:
                parts.append("| " + " | ".join(_md_cell(r.get(k)) for k in ROW_FIELDS) + " |")
            parts.append("")
    return "\n".join(parts)


# ---- import ----------------------------------------------------------------------------------


def parse(text: str, name: str = "the file") -> list[dict[str, Any]]:
    """Entries from an export (json, csv, md) or a `gpulab run --json` stream, validated."""
    stripped = text.lstrip()
    if not stripped:
        raise NotAHistory(f"{name} is empty")
    if stripped.startswith("# gpulab history"):
        entries = _from_md(text, name)
    elif stripped.startswith(("{", "[")):
        entries = _from_json(stripped, name)
    elif stripped.split("\n", 1)[0].startswith(",".join(RUN_TEXT[:2])):
        entries = _from_csv(text, name)
    else:
        raise NotAHistory(
            f"{name} is not a gpulab history export (json, csv, md) nor `gpulab run --json` output"
        )
    if not entries:
        raise NotAHistory(f"{name} holds no runs")
    return [_validated(e, name, i) for i, e in enumerate(entries, 1)]


def _from_json(text: str, name: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError:
        return _from_stream(text, name)
    if isinstance(data, dict) and str(data.get(SCHEMA_KEY, "")).startswith("gpulab.history/"):
        if isinstance(data.get("runs"), list):  # `gpulab history --json` (or an export)
            return list(data["runs"])
        data = {k: v for k, v in data.items() if k != SCHEMA_KEY}  # `history show --json`
    if isinstance(data, dict) and data.get("format") == EXPORT_FORMAT:
        runs = data.get("runs")
        if not isinstance(runs, list):
            raise NotAHistory(f"{name}: 'runs' is not a list")
        return runs
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and data.get("format") == FORMAT:
        return [data]
    if isinstance(data, dict) and "type" in data:
        return _from_stream(text, name)
    raise NotAHistory(f"{name} is JSON but not a gpulab history export")


def _from_stream(text: str, name: str) -> list[dict[str, Any]]:
    """`gpulab run --json`: one event per line; each result event becomes an entry."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise NotAHistory(f"{name} line {n} is not JSON") from None
        if not isinstance(event, dict) or "type" not in event:
            raise NotAHistory(f"{name} line {n} is not a gpulab event")
        if event["type"] != ev.RESULT:
            continue
        result = event.get("result")
        record = (result or {}).get("record") if isinstance(result, dict) else None
        if not isinstance(record, dict) or not record.get("experiment"):
            raise NotAHistory(f"{name} line {n}: a result event without its record")
        found.append(
            entry(
                record["experiment"],
                record.get("params") or {},
                event,
                source="cli",
                calibration={"gpu": None, "cpu": None, "reason": "not in a run --json stream"},
                telemetry=no_telemetry("not in a run --json stream"),
            )
        )
    if not found:
        raise NotAHistory(f"{name} has no result event (a `gpulab run --json` that finished)")
    return found


def _row_from_text(raw: Mapping[str, str]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for k in ROW_FIELDS:
        value = raw.get(k, "")
        if k in NUMERIC:
            row[k] = float(value) if value not in ("", "None") else None
        elif k == "runs":
            row[k] = int(value or 0)
        elif k == "extrapolated":
            row[k] = value == "True"
        else:
            row[k] = value
    return row


def _run_from_text(raw: Mapping[str, str], name: str, where: str) -> dict[str, Any]:
    e: dict[str, Any] = {"format": FORMAT}
    for k in RUN_TEXT:
        e[k] = raw.get(k, "") or None
    for k in RUN_JSON:
        try:
            e[k] = json.loads(raw.get(k) or "null")
        except ValueError:
            raise NotAHistory(f"{name} {where}: {k} is not JSON") from None
    e["headline"] = e["headline"] or ""
    e["rows"] = []
    return e


def _from_csv(text: str, name: str) -> list[dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    reader = csv.DictReader(io.StringIO(text))
    missing = {"experiment", "time_median_s"} - set(reader.fieldnames or [])
    if missing:
        raise NotAHistory(f"{name}: a CSV without the column(s) {', '.join(sorted(missing))}")
    try:
        for n, raw in enumerate(reader, 2):
            key = f"{raw.get('id')}|{raw.get('started_at')}|{raw.get('experiment')}"
            e = runs.get(key) or runs.setdefault(key, _run_from_text(raw, name, f"line {n}"))
            if raw.get("contender"):
                e["rows"].append(_row_from_text(raw))
    except (ValueError, csv.Error) as exc:
        raise NotAHistory(f"{name}: a bad CSV value: {exc}") from None
    return list(runs.values())


def _from_md(text: str, name: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    fields: dict[str, str] = {}
    header: list[str] = []
    sections = text.split("\n## Run ")[1:]
    for n, section in enumerate(sections, 1):
        lines = section.splitlines()
        fields = {"id": lines[0].split(":", 1)[0].strip()}
        fields["experiment"] = lines[0].split(":", 1)[1].split(" on ", 1)[0].strip()
        header, rows = [], []
        for line in lines[1:]:
            if line.startswith("- ") and ": " in line:
                k, v = line[2:].split(": ", 1)
                fields[k] = v[1:-1] if k in RUN_JSON and v.startswith("`") else v
            elif line.startswith("| ") and not header:
                header = [c.strip() for c in line.strip("| ").split(" | ")]
            elif line.startswith("| "):
                cells = [c.strip().replace("\\|", "|") for c in _split_md(line)]
                rows.append(dict(zip(header, cells, strict=False)))
        e = _run_from_text(fields, name, f"run {n}")
        try:
            e["rows"] = [_row_from_text(r) for r in rows]
        except ValueError as exc:
            raise NotAHistory(f"{name} run {n}: a bad table value: {exc}") from None
        runs.append(e)
    return runs


def _split_md(line: str) -> list[str]:
    body = line.strip()[1:-1]
    cells, cur, i = [], "", 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cur += "\\|"
            i += 2
            continue
        if body[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += body[i]
        i += 1
    cells.append(cur)
    return cells


def _validated(e: Any, name: str, n: int) -> dict[str, Any]:
    where = f"{name} run {n}"
    if not isinstance(e, dict):
        raise NotAHistory(f"{where} is not an object")
    if not isinstance(e.get("experiment"), str) or not e["experiment"]:
        raise NotAHistory(f"{where} has no experiment name")
    if e.get("status") not in STATUSES:
        raise NotAHistory(f"{where}: status {e.get('status')!r} is not one of {STATUSES}")
    rows = e.get("rows") or []
    if not isinstance(rows, list) or not all(_good_row(r) for r in rows):
        raise NotAHistory(f"{where}: its rows need a contender and a median time (seconds)")
    if not isinstance(e.get("params") or {}, dict):
        raise NotAHistory(f"{where}: params is not an object")
    out = dict(e)
    out["rows"] = rows
    out["params"] = e.get("params") or {}
    out.setdefault("verdict", verdict_of({"verdicts": e.get("verdicts") or []}))
    return out


def _good_row(r: Any) -> bool:
    t = r.get("time_median_s") if isinstance(r, dict) else None
    ok_time = isinstance(t, int | float) and not isinstance(t, bool)
    return isinstance(r, dict) and bool(r.get("contender")) and ok_time


def as_imported(entries: Iterable[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Entries ready to keep here: their own id and source stay as `imported_*`."""
    out = []
    for e in entries:
        e = dict(e)
        e["imported_id"] = e.pop("id", None)
        e["imported_source"] = e.get("source")
        e["imported_from"] = name
        e["source"] = "import"
        out.append(e)
    return out
