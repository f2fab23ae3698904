"""Plain-text rendering of results for the terminal (CLI tables, bench Markdown)."""

from __future__ import annotations

from typing import Any

from gpulab.render.plot import plot_groups


def fmt_time(seconds: float | None) -> str:
    """A duration in s, ms or us, '-' for None."""
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def fmt_num(value: float | None, digits: int = 3) -> str:
    """A number to `digits` significant digits, '-' for None."""
    if value is None:
        return "-"
    return f"{value:.{digits}g}"


def fmt_pct(m: dict[str, Any]) -> str:
    """A row's % of peak; "n/a" where the row states there is no calibrated ceiling for it."""
    pct = m.get("percent_of_peak")
    if pct is not None:
        return f"{pct:.0f}%"
    return "n/a" if "no calibrated ceiling" in (m.get("peak_name") or "") else "-"


def measurement_rows(result: dict[str, Any]) -> list[list[str]]:
    """The result's rows as table cells, with each row's verdict."""
    verdicts = {
        (v["contender"], v.get("size", ""), v.get("dtype", "")): v
        for v in result.get("verdicts", [])
    }
    by_contender = {v["contender"]: v for v in result.get("verdicts", [])}
    rows = []
    for m in result.get("measurements", []):
        v = verdicts.get(
            (m["contender"], m.get("size", ""), m.get("dtype", ""))
        ) or by_contender.get(m["contender"])
        verdict = "-" if v is None else ("pass" if v["passed"] else "FAIL")
        spread = f"{fmt_time(m['time_median_s'])} [{fmt_time(m['time_min_s'])}..{fmt_time(m['time_max_s'])}]"
        thr = (
            "-"
            if m.get("throughput") is None
            else f"{fmt_num(m['throughput'])} {m.get('unit', '')}"
        )
        if m.get("extrapolated"):
            thr += " (extrapolated)"
        rows.append(
            [
                m["contender"],
                m.get("size", ""),
                m.get("dtype", ""),
                spread,
                thr,
                fmt_pct(m),
                fmt_time(m.get("cold_s")),
                verdict,
            ]
        )
    return rows


HEADERS = [
    "contender",
    "size",
    "dtype",
    "time median [min..max]",
    "throughput",
    "% peak",
    "cold",
    "verdict",
]


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain-text table, columns as wide as their widest cell."""
    widths = (
        [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
        if rows
        else [len(h) for h in headers]
    )

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def row_notes(result: dict[str, Any]) -> list[str]:
    """Each row's note, one line per row that has one: what the table's cells cannot say (a
    capped count, a noisy timing, why a % is over 100, how a row was timed)."""
    out = []
    for m in result.get("measurements", []):
        if m.get("note"):
            label = " ".join(
                x for x in (m["contender"], m.get("size", ""), m.get("dtype", "")) if x
            )
            out.append(f"  {label}: {m['note']}")
    return out


def render_result(result: dict[str, Any], plots: bool = False) -> str:
    """A result (its dict) as text: the rows, the headline and, with `plots`, the plots."""
    parts = [f"{result['record']['experiment']} on {result['record'].get('device', '?')}"]
    rows = measurement_rows(result)
    if rows:
        parts.append(table(HEADERS, rows))
    notes = row_notes(result)
    if notes:
        parts.append("notes:\n" + "\n".join(notes))
    for name, why in result.get("unavailable", {}).items():
        parts.append(f"  {name}: not run: {why}")
    summary = result.get("summary") or {}
    if summary:
        parts.append(
            "summary: "
            + ", ".join(
                f"{k}={fmt_num(v, 8) if isinstance(v, float) else v}"
                for k, v in summary.items()
                if not isinstance(v, dict | list)
            )
        )
    if result.get("explanation"):
        parts.append("What you just saw: " + result["explanation"])
    if plots and result.get("series"):
        parts.append(plot_groups(result["series"]))
    if result.get("headline"):  # last: the line a person reads when the run ends
        parts.append("Answer: " + result["headline"])
    return "\n".join(parts)
