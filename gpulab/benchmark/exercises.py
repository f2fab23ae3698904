"""`gpulab bench --suite exercises` (also part of `full`): every exercise this machine can run,
through a warm worker exactly as `gpulab ex check` runs it.

Per exercise: our solution's verdict, grade and % of the ceiling (and the library's), the
expert solution's (kernel exercises: checked three times with fresh seeds, the median fraction
graded, as `python -m gpulab.benchmark.experts` and the GPU tests grade it; gold means the gold
threshold, 0.85 of the expert's own anchor figure, still holds on this GPU), the check
latency from submitting to the verdict (the first check of the exercise in this worker, and a
repeat), every known-wrong solution: rejected, and with the
message its `# expect:` line names, and every unusual correct one (right/): passed. The reference
is checked `repeat` times in a row with fresh seeds (`gpulab bench --repeat N`); each time it
fails is a false rejection, counted and kept with its message: noise must never decide a verdict.

Before its first check each exercise is prepared (`exercise-prepare`, what the TUI runs when a
learner opens the exercise: its check's own kernels compiled while the statement is read); that
one-time cost is reported beside the first check (`prepare_s`), not hidden in it or dropped.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from typing import Any

from gpulab.benchmark.targets import judge
from gpulab.core.devices import Inventory
from gpulab.ex.session import Checker
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.speed import grade_for

FIRST_CHECK_S = 1.5  # a small kernel exercise, compilation included
REPEAT_CHECK_S = 0.5
SEED = 20260101
REPEAT = 3  # reference checks per exercise by default: the first, the timed repeat, one more
EXPERT_CHECKS = 3


def exercises_part(quick: bool = False, device: int = 0, repeat: int = REPEAT) -> dict[str, Any]:
    """Check every exercise's reference, wrong and right solutions through a warm worker,
    `repeat` times."""
    return asyncio.run(_run(quick, device, max(2, repeat)))


async def _run(quick: bool, device: int, repeat: int) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    async with Checker(device=device, quick=quick) as checker:
        hello = await checker.client.wait_ready(600)
        inv = Inventory.from_dict(hello["inventory"])
        for ex in load_catalog():
            why = ex.unavailable(inv)
            if why:
                entries.append({"exercise": ex.id, "order": ex.order, "skipped": why})
                continue
            sys.stderr.write(f"  exercise {ex.id}\n")
            prepare_s = await checker.prepare(ex)
            first, first_s = await checker.check(ex, ex.solution_path, SEED)
            again, repeat_s = await checker.check(ex, ex.solution_path, SEED + 1)
            false = [r.message for r in (first, again) if not r.passed]
            for k in range(2, repeat):
                more, _ = await checker.check(ex, ex.solution_path, SEED + k)
                if not more.passed:
                    false.append(more.message)
            rights = []
            for r in ex.right:
                got, seconds = await checker.check(ex, r.path, SEED)
                rights.append(
                    {
                        "name": r.name,
                        "why": r.why,
                        "passed": got.passed,
                        "message": got.message,
                        "seconds": seconds,
                    }
                )
            wrongs = []
            for w in ex.wrong:
                got, seconds = await checker.check(ex, w.path, SEED)
                wrongs.append(
                    {
                        "name": w.name,
                        "expect": w.expect,
                        "rejected": not got.passed,
                        "message_ok": w.matches(got.message),
                        "message": got.message,
                        "seconds": seconds,
                    }
                )
            expert = None
            if ex.has_expert:
                expert = await _expert(checker, ex)
            repeat_ = again
            timing = repeat_.timing or first.timing or {}
            entries.append(
                {
                    "exercise": ex.id,
                    "order": ex.order,
                    "needs": list(ex.needs),
                    "passed": first.passed and repeat_.passed,
                    "message": (first if not first.passed else repeat_).message,
                    "grade": repeat_.grade if repeat_.passed else None,
                    "reference_checks": repeat,
                    "false_rejections": false,
                    "right": rights,
                    "fraction": timing.get("fraction"),
                    "library_fraction": timing.get("library_fraction"),
                    "value": (timing.get("learner") or {}).get("value"),
                    "library": (timing.get("library") or {}).get("name"),
                    "metric": timing.get("metric"),
                    # the exercise's own facts: where the figure sits on this GPU's roofline
                    "ceiling": ex.ceiling or None,
                    "intensity": ex.intensity.per_byte if ex.intensity else None,
                    "device_state": timing.get("device_state"),
                    "prepare_s": prepare_s,
                    "first_check_s": first_s,
                    "repeat_check_s": repeat_s,
                    # where each check's time went; "outside" is the runner's share (submit,
                    # the job's plumbing, the verdict's way back), not the grader's
                    "first_phases": phases(first, first_s),
                    "repeat_phases": phases(again, repeat_s),
                    "wrong": wrongs,
                    "expert": expert,
                }
            )
    return {"quick": quick, "exercises": entries}


async def _expert(checker: Checker, ex: Any) -> dict[str, Any]:
    """The expert solution checked EXPERT_CHECKS times with fresh seeds: every check must pass,
    and the median fraction of the ceiling is graded (one disturbed check cannot decide it)."""
    results = [
        (await checker.check(ex, ex.expert_path, SEED + 100 + k))[0] for k in range(EXPERT_CHECKS)
    ]
    failed = [r for r in results if not r.passed]
    timings = [r.timing or {} for r in results]
    fractions = [float(t["fraction"]) for t in timings if t.get("fraction") is not None]
    values = [v for t in timings if (v := (t.get("learner") or {}).get("value")) is not None]
    fraction = statistics.median(fractions) if fractions else None
    return {
        "passed": not failed,
        "message": (failed[0] if failed else results[-1]).message,
        "grade": grade_for(fraction, ex.grades) if not failed and fraction is not None else None,
        "fraction": fraction,
        "fractions": fractions,
        "value": statistics.median(values) if values else None,
        "anchor": ex.expert,
        "checks": [check_timing(t) for t in timings],
    }


def check_timing(timing: dict[str, Any]) -> dict[str, Any]:
    """What one check's timing says beyond its fraction: the learner's median, fastest and
    slowest call, how many, and the library's fraction timed in the same check. A check that
    comes out low with its library low too saw a slow GPU; with the library at its usual figure,
    something in the learner's calls."""
    learner = timing.get("learner") or {}
    return {
        "fraction": timing.get("fraction"),
        "library_fraction": timing.get("library_fraction"),
        "median_s": learner.get("median_s"),
        "min_s": learner.get("min_s"),
        "max_s": learner.get("max_s"),
        "runs": learner.get("runs"),
        "device_state": timing.get("device_state"),
        "lead_us": timing.get("lead_us"),
    }


def phases(result: Any, latency_s: float) -> dict[str, float]:
    """The grader's phases of one check plus "outside": latency the grader did not see."""
    out = {k: round(v, 4) for k, v in (result.phases or {}).items()}
    out["outside"] = round(max(0.0, latency_s - result.seconds), 4)
    return out


def slowest(phases_: dict[str, float] | None, top: int = 2) -> str:
    """'compare 0.61, runs 0.40': the largest phases, for the markdown table."""
    if not phases_:
        return "-"
    big = sorted(((v, k) for k, v in phases_.items()), reverse=True)[:top]
    return ", ".join(f"{k} {v:.2f}" for v, k in big)


def comparisons(part: dict[str, Any], gpu: bool) -> list[dict[str, Any]]:
    """The exercises part's claims as comparisons: references and right solutions pass, wrong
    ones fail."""
    ran = [e for e in part["exercises"] if "skipped" not in e]
    if not ran:
        return []
    wrongs = [w for e in ran for w in e["wrong"]]
    rights = [r for e in ran for r in e.get("right", [])]
    checks = sum(e.get("reference_checks", 2) for e in ran)
    false = sum(len(e.get("false_rejections", [])) for e in ran)
    out = [
        judge(
            f"exercises: false rejections in {checks} reference checks",
            "0",
            float(false),
            0.0,
            higher=False,
        ),
        judge(
            "exercises: reference solutions pass",
            f"all {len(ran)}",
            float(sum(e["passed"] for e in ran)),
            float(len(ran)),
        ),
        judge(
            "exercises: known-wrong solutions rejected with their message",
            f"all {len(wrongs)}",
            float(sum(w["rejected"] and w["message_ok"] for w in wrongs)),
            float(len(wrongs)),
        ),
    ]
    if rights:
        out.append(
            judge(
                "exercises: unusual correct solutions (right/) pass",
                f"all {len(rights)}",
                float(sum(r["passed"] for r in rights)),
                float(len(rights)),
            )
        )
    if gpu:
        silver = [
            e for e in ran if e["grade"] in ("silver", "gold") or e["metric"] in (None, "none")
        ]
        out.append(
            judge(
                "exercises: reference grade silver or better",
                f"all {len(ran)}",
                float(len(silver)),
                float(len(ran)),
            )
        )
        experts = [e["expert"] for e in ran if e.get("expert")]
        if experts:
            out.append(
                judge(
                    "exercises: expert solutions graded gold",
                    f"all {len(experts)}",
                    float(sum(x["passed"] and x["grade"] == "gold" for x in experts)),
                    float(len(experts)),
                )
            )
    kernels = [e for e in ran if "cupy" in e.get("needs", [])] or ran
    which = "kernel exercises" if kernels is not ran else "exercises"
    out.append(
        judge(
            f"exercises: first check after the exercise's preparation, worst of the {which} (s)",
            f"<= {FIRST_CHECK_S} s",
            max(e["first_check_s"] for e in kernels),
            FIRST_CHECK_S,
            higher=False,
        )
    )
    out.append(
        judge(
            f"exercises: repeat check, worst of the {which} (s)",
            f"<= {REPEAT_CHECK_S} s",
            max(e["repeat_check_s"] for e in kernels),
            REPEAT_CHECK_S,
            higher=False,
        )
    )
    out.append(
        judge(
            "exercises: repeat check, median over all (s)",
            f"<= {REPEAT_CHECK_S} s",
            statistics.median(e["repeat_check_s"] for e in ran),
            REPEAT_CHECK_S,
            higher=False,
        )
    )
    return out


def markdown_lines(part: dict[str, Any]) -> list[str]:
    """The exercises part of the Markdown report."""

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.0f}%"

    lines = [
        "",
        "## Exercises (reference solutions through the worker)",
        "",
        "| exercise | verdict | grade | your code | % ceiling | library % | expert (anchor) | prepared (once) | first check | repeat | repeat's slowest phases (s) | reference checks passed | wrong rejected | right passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in part["exercises"]:
        if "skipped" in e:
            lines.append(f"| {e['exercise']} | not run: {e['skipped']} | | | | | | | | | | | | |")
            continue
        ok = sum(w["rejected"] and w["message_ok"] for w in e["wrong"])
        n_ref = e.get("reference_checks", 2)
        refs = f"{n_ref - len(e.get('false_rejections', []))}/{n_ref}"
        right = e.get("right", [])
        rights = f"{sum(r['passed'] for r in right)}/{len(right)}"
        value = "-" if e["value"] is None else f"{e['value']:.4g} {e['metric']}"
        x = e.get("expert")
        if not x:
            expert = "-"
        elif not x["passed"]:
            expert = "FAIL"
        else:
            expert = f"{x['grade']} {pct(x['fraction'])} ({pct(x['anchor'])})"
        prep = e.get("prepare_s")
        prepared = "-" if prep is None else f"{prep:.2f} s"
        lines.append(
            f"| {e['exercise']} | {'pass' if e['passed'] else 'FAIL'} | {e['grade'] or '-'} | "
            f"{value} | {pct(e['fraction'])} | {pct(e['library_fraction'])} | {expert} | "
            f"{prepared} | {e['first_check_s']:.2f} s | {e['repeat_check_s']:.2f} s | "
            f"{slowest(e.get('repeat_phases'))} | {refs} | {ok}/{len(e['wrong'])} | {rights} |"
        )
    bad = [
        (e["exercise"], w)
        for e in part["exercises"]
        for w in e.get("wrong", [])
        if not (w["rejected"] and w["message_ok"])
    ]
    for ex_id, w in bad:
        lines.append(f"\n{ex_id}/{w['name']}: expected '{w['expect']}', got: {w['message']}")
    for e in part["exercises"]:
        for message in e.get("false_rejections", []):
            lines.append(f"\n{e['exercise']}/solution.py rejected: {message}")
        for r in e.get("right", []):
            if not r["passed"]:
                lines.append(f"\n{e['exercise']}/right/{r['name']} rejected: {r['message']}")
        x = e.get("expert")
        if x and not x["passed"]:
            lines.append(f"\n{e['exercise']}/expert.py rejected: {x['message']}")
    return lines
