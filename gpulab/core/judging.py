"""Rows judged against this device's calibrated ceilings: each row's % of peak, the re-measure of
a ceiling that a row beats by more than OVER_CEILING, the note on a row still above 100%, and
the final re-judging of a finished run against one figure per table.

Separate from peaks.py, which measures and caches the ceilings: this is what an experiment's
rows do with them (`Context.measurement` calls `judge`, the end of a run calls `rejudge`).
Headless: reads figures only, measuring through `peaks.remeasure` when it must.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.peaks import OVER_CEILING, Ceiling, peak_for, remeasure, remeasured


def judge(ctx: Any, m: Any) -> None:
    """Set row `m`'s % of peak from its ceiling's current figure (see `Ceiling`).

    When the row beats the ceiling by more than OVER_CEILING, the ceiling is re-measured
    (`remeasure`, once per figure and process) and the row judged again; a row still above it
    keeps its honest percentage and says so in its note (`settle`).
    """
    ceiling = getattr(m, "_ceiling", None)
    if not isinstance(ceiling, Ceiling) or not m.throughput:
        return
    live = peak_for(ceiling.peaks, ceiling.what)
    if not live:
        return
    if 100.0 * m.throughput / live > 100.0 * OVER_CEILING and remeasure(
        ctx, ceiling.peaks, ceiling.what
    ):
        m.extra["ceiling_remeasured"] = True
    settle(m)


def settle(m: Any) -> bool:
    """Judge row `m` against the current figure of its ceiling: its % of peak, the figure used
    (`extra["ceiling"]`), and a note on any row above 100%. True when the figure differs from
    the one the row was last judged against (a re-measure happened since)."""
    ceiling = getattr(m, "_ceiling", None)
    if not isinstance(ceiling, Ceiling) or not m.throughput:
        return False
    live = peak_for(ceiling.peaks, ceiling.what)
    if not live:
        return False
    before = m.extra.get("ceiling")
    changed = before is not None and abs(float(before) - float(live)) > 1e-9 * float(live)
    pct = 100.0 * m.throughput / live
    m.percent_of_peak = pct
    m.extra["ceiling"] = float(live)
    m.extra["ceiling_figure"] = ceiling.what
    old_note = m.extra.pop("ceiling_note", "")
    if old_note:  # judged before against another figure: that note no longer holds
        m.note = m.note.replace(f"; {old_note}", "").replace(old_note, "")
    why = over_note(pct, ceiling)
    if why:
        m.extra["ceiling_note"] = why
        m.note = f"{m.note}; {why}" if m.note else why
    return changed


def over_note(pct: float, ceiling: Ceiling, who: str = "this row's workload") -> str:
    """Why a row (`who`) is above 100% of its ceiling ('' when it is not)."""
    if pct <= 100.0:
        return ""
    if pct <= 100.0 * OVER_CEILING:
        return (
            f"{pct:.0f}% of the calibrated {ceiling.what} ceiling: within the 5% that two "
            "measurements of the same figure differ by (clocks, the link, the load); a ceiling "
            "is re-measured only when a row beats it by more"
        )
    done = remeasured(ceiling.peaks, ceiling.what)
    how = (
        f"even after re-measuring it: {who} beats the calibration's own"
        if done
        else "and it could not be re-measured: re-calibrate (gpulab run calibrate)"
    )
    return f"{pct:.0f}% of the calibrated {ceiling.what} ceiling {how}"


def rejudge(result: Any) -> dict[str, dict[str, float]]:
    """Judge every row of a finished run again against its ceiling's final figure (one
    denominator per table), and record in the result which figures were re-measured during the
    run: {figure: {"was": first figure the run used, "now": final}}."""
    changed: dict[str, dict[str, float]] = {}
    for m in result.measurements:
        before = m.extra.get("ceiling")
        if settle(m) and before is not None:
            fig = m.extra["ceiling_figure"]
            entry = changed.setdefault(fig, {"was": float(before), "now": m.extra["ceiling"]})
            entry["was"] = min(entry["was"], float(before))
            m.extra["rejudged"] = True
    if changed:
        result.summary["ceilings_remeasured"] = changed
        figs = ", ".join(
            f"{f} {v['was']:.4g} -> {v['now']:.4g}" for f, v in sorted(changed.items())
        )
        text = (
            f" A ceiling was re-measured during this run ({figs}): every row was judged "
            "again against the final figure, so one figure is the denominator of each table."
        )
        result.explanation = (result.explanation or "") + text
    return changed
