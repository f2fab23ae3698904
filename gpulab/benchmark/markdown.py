"""`gpulab bench`'s Markdown report: the ceilings, the targets, every run's table.

Each table has a `timing` column where its rows carry a timing regime (back to back, or single
calls with launch latency), and each row's note below it: a capped count, a noisy timing, the
reason for a % over 100, a cache-resident copy. Rows above 100% of their ceiling are listed
again in a section of their own, each with its reason.
"""

from __future__ import annotations

import time
from typing import Any

from gpulab.benchmark import cli_check
from gpulab.benchmark.exercises import markdown_lines
from gpulab.render.results import fmt_num, fmt_pct, fmt_time


def markdown(report: dict[str, Any]) -> str:
    """The bench report as Markdown."""

    lines = [
        f"# gpulab bench: {report['suite']} on {report['device']}",
        "",
        f"driver {report.get('driver') or '-'}; "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v),
        f"gpulab {report['gpulab_version']}; {time.strftime('%Y-%m-%d %H:%M', time.localtime(report['started_at']))}"
        + ("; quick" if report.get("quick") else ""),
        "",
        "## Calibrated ceilings (this run)",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for name, value, unit in report.get("peak_rows", []):
        lines.append(f"| {name} | {value:.4g} {unit} |")
    for which, changed in (
        ("device", report.get("peaks_remeasured")),
        ("host", report.get("cpu_peaks_remeasured")),
    ):
        if changed:
            figs = "; ".join(f"{k} {v['was']:.4g} -> {v['now']:.4g}" for k, v in changed.items())
            lines += [
                "",
                f"Re-measured during this run ({which}): {figs}. The table above holds the final "
                "figures, and every row below was judged against them (rows re-judged at the "
                "end of their run: `extra.rejudged`).",
            ]
    if report.get("peak_rows"):
        lines += [
            "",
            "Each figure is the best this device reached (the fastest sample; pinned copies "
            "at several sizes in several rounds), not a median. Matmul ceilings, and every GPU "
            "matmul row of 0.5 ms or more below (all of them in dtypes and "
            "tensor-core-alignment), are timed in the same sustained regime: back to back after "
            "0.5 s untimed, clocks settled at the power limit. Tables with a `timing` column say "
            "per row (JSON: `extra.regime`): `back to back`, or `single calls`, one call at a "
            "time, launch latency included (the matmul race's short products, each with a "
            "`back-to-back` row beside it). Rows named `single calls` in dtypes ran on boost "
            "clocks and carry no % of peak.",
        ]
    lines += [
        "",
        "## Targets (same run)",
        "",
        "| comparison | target | value | status |",
        "|---|---|---|---|",
    ]
    for c in report["comparisons"]:
        value = "-" if c.get("value") is None else f"{c['value']:.4g}"
        lines.append(f"| {c['name']} | {c['target']} | {value} | {c['status']} |")
    for c in report["comparisons"]:
        if c.get("reason") and c.get("status") == "not run":
            lines.append(f"\n{c['name']}: not run: {c['reason']}")
    over = report.get("over_ceiling") or []
    if over:
        lines += ["", "## Rows above 100% of their ceiling", ""]
        for o in over:
            reason = o["reason"] or "NO REASON STATED"
            lines.append(
                f"- {o['experiment']}: {o['contender']} {o['size']} {o['dtype']}: "
                f"{o['percent_of_peak']:.0f}%: {reason}"
            )
    for c in report["comparisons"]:
        if c.get("rounds") and "ours_gs" in c["rounds"][0]:
            lines += ["", f"{c['name']}: {c.get('method', '')}.", ""]
            lines += [
                "| round | ours G samples/s | recipe G samples/s | ratio |",
                "|---|---|---|---|",
            ]
            for i, r in enumerate(c["rounds"], 1):
                lines.append(
                    f"| {i} | {r['ours_gs']:.4g} | {r['recipe_gs']:.4g} | "
                    f"{r['ours_gs'] / r['recipe_gs']:.4g} |"
                )
            lines.append(
                f"| median | {c['ours_gs']:.4g} | {c['recipe_gs']:.4g} | {c['ratio']:.4g} |"
            )
            if c.get("experiment_row_gs"):
                lines.append(
                    f"\n(The experiment's own torch row at this count: "
                    f"{c['experiment_row_gs']:.4g} G samples/s.)"
                )
            continue
        if not c.get("rounds"):
            continue
        lines += [
            "",
            f"{c['name']}: {c.get('method', '')}.",
            "",
            "| round | gpulab TFLOP/s | torch.utils.benchmark.Timer TFLOP/s | ratio |",
            "|---|---|---|---|",
        ]
        for i, r in enumerate(c["rounds"], 1):
            g, t = r["gpulab_tflops"], r["benchmark_timer_tflops"]
            lines.append(f"| {i} | {g:.4g} | {t:.4g} | {g / t:.4g} |")
        lines.append(
            f"| median | {c['gpulab_tflops']:.4g} | {c['benchmark_timer_tflops']:.4g} | "
            f"{c['ratio']:.4g} |"
        )
        if c.get("race_tflops"):
            lines.append(
                f"\n(The race's own row earlier in this run: {c['race_tflops']:.4g} TFLOP/s.)"
            )
    for run in report["runs"]:
        params = ", ".join(f"{k}={v}" for k, v in run["params"].items())
        lines += ["", f"## {run['experiment']} ({params})", ""]
        if run["status"] != "result":
            f = run.get("failure", {})
            lines.append(f"{run['status']}: {f.get('kind')}: {f.get('message')}")
            continue
        res = run["result"]
        lines += result_table(res)
        for cid, why in res.get("unavailable", {}).items():
            lines.append(f"\n{cid}: not run: {why}")
    if report.get("exercises"):
        lines += markdown_lines(report["exercises"])
    if report.get("cli"):
        lines += cli_check.markdown_lines(report["cli"])
    return "\n".join(lines) + "\n"


def regime_label(m: dict[str, Any]) -> str:
    """A row's timing regime in two words (matmul's rows: see backends.regime)."""
    how = (m.get("extra") or {}).get("regime", "")
    if how.startswith("sustained"):
        return "back to back"
    if how.startswith("single"):
        return "single calls"
    return how or "-"


def result_table(res: dict[str, Any]) -> list[str]:
    """One run's rows as Markdown: a `timing` column where rows carry a regime, and each row's
    note below the table (capped counts, noisy timings, reasons for a % over 100, ...)."""
    verdicts = {(v["contender"], v.get("size"), v.get("dtype")): v for v in res["verdicts"]}
    timed = any((m.get("extra") or {}).get("regime") for m in res["measurements"])
    head = "| contender | size | dtype | median [min..max] | throughput | % peak | cold | check |"
    rule = "|---|---|---|---|---|---|---|---|"
    if timed:
        head += " timing |"
        rule += "---|"
    lines = [head, rule]
    notes = []
    for m in res["measurements"]:
        v = verdicts.get((m["contender"], m["size"], m["dtype"]))
        check = "-" if v is None else ("pass" if v["passed"] else "FAIL") + f" ({v['error']:.2g})"
        thr = "-" if m["throughput"] is None else f"{fmt_num(m['throughput'], 4)} {m['unit']}"
        if m.get("extrapolated"):
            thr += " (extrapolated)"
        pct = fmt_pct(m)
        if m.get("note") and m.get("percent_of_peak", 0) and m["percent_of_peak"] > 100:
            pct += " (see note)"
        spread = (
            f"{fmt_time(m['time_median_s'])} [{fmt_time(m['time_min_s'])}.."
            f"{fmt_time(m['time_max_s'])}]"
        )
        if (m.get("extra") or {}).get("noisy"):
            spread += " noisy"
        line = (
            f"| {m['contender']} | {m['size']} | {m['dtype']} | {spread} | {thr} | {pct} | "
            f"{fmt_time(m.get('cold_s'))} | {check} |"
        )
        if timed:
            line += f" {regime_label(m)} |"
        lines.append(line)
        if m.get("note"):
            notes.append(f"- {m['contender']} {m['size']} {m['dtype']}".rstrip() + f": {m['note']}")
    if notes:
        lines += ["", "Notes:", "", *notes]
    return lines
