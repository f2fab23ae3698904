"""`gpulab bench --suite exercises` (also part of `full`): every exercise this machine can run,
through a warm worker exactly as `gpulab ex check` runs it.

Per exercise: our reference solution checked `repeat` times in a row with fresh seeds
(`gpulab bench --repeat N`), and the expert solution as many times where there is one; each
check's verdict, grade, the learner's speed as a fraction of the yardstick timed in the same
rounds (with its interval) and of the ceiling, and the library's; how often the grade changed
from one repeat to the next (a flip: noise deciding a grade); the check latency from submitting
to the verdict (the first check of the exercise in this worker, and a repeat, which for a
collective exercise comes `EDIT_PAUSE_S` after the first, as a learner's would); every known-wrong
solution: rejected, and with the message its `# expect:` line names; every unusual correct one
(right/): passed. A reference check that fails is a false rejection, counted and kept with its
message: noise must never decide a verdict.

`--soak N` (opt-in, long): on a GPU, every exercise's reference checked N times more in a row
while another process keeps one CPU core busy (the learner's editor, a build, a notebook beside
the lab): every rejection and grade flip is counted. The PyTorch exercises count too, since they
run and are timed on the GPU when there is one; the collective exercises do not (a check of
theirs is seconds of rank start-up and NCCL, which fifty in a row would spend on set-up, not on
the grade; their references are checked `--repeat` times like every other).

Before its first check each exercise is prepared (`exercise-prepare`, what the TUI runs when a
learner opens the exercise: its check's own kernels compiled while the statement is read); that
one-time cost is reported beside the first check (`prepare_s`), not hidden in it or dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from gpulab.benchmark.targets import judge
from gpulab.core.devices import Inventory
from gpulab.ex.session import Checker
from gpulab.exercises.loader import load_catalog

FIRST_CHECK_S = 1.5  # a small kernel exercise, compilation included
REPEAT_CHECK_S = 0.5
# Before a collective exercise's repeat check: the seconds a learner takes to edit and save,
# in which the worker starts the ranks that check will take (NCCL's set-up is 1 to 3 s)
EDIT_PAUSE_S = 4.0
SEED = 20260101
REPEAT = 3  # checks of the reference (and the expert) per exercise by default
SOAK_SEED = 20270000


def exercises_part(
    quick: bool = False,
    device: int = 0,
    repeat: int = REPEAT,
    only: list[str] | None = None,
    soak: int = 0,
    on_part: Callable[[dict[str, Any]], None] | None = None,
    soak_only: bool = False,
) -> dict[str, Any]:
    """Check every exercise's reference, expert, wrong and right solutions through a warm
    worker, the reference and expert `repeat` times; `only`: these exercise ids; `soak`: that
    many more reference checks of every GPU exercise with a core kept busy (`soak_only`: the
    soak alone, each exercise prepared first). `on_part` gets the results so far (marked
    `"partial": true`) after each exercise, so a run cut short (a time limit, ctrl+c) keeps what
    it measured."""
    return asyncio.run(
        _run(quick, device, max(2, repeat), only or [], max(0, soak), on_part, soak_only)
    )


def series(results: list[Any]) -> dict[str, Any]:
    """One solution's repeated checks: every one must pass, its grade must not change from one
    repeat to the next (`flips`), and its figures (fraction of the yardstick, of the ceiling)
    are kept per check with their medians."""
    passed = [r for r in results if r.passed]
    grades = [r.grade for r in passed]
    flips = sum(1 for a, b in zip(grades, grades[1:], strict=False) if a != b)
    timings = [r.timing or {} for r in passed]
    figures = [
        float(t["of_yardstick"]["figure"])
        for t in timings
        if (t.get("of_yardstick") or {}).get("figure") is not None
    ]
    fractions = [float(t["fraction"]) for t in timings if t.get("fraction") is not None]
    values = [v for t in timings if (v := (t.get("learner") or {}).get("value")) is not None]
    return {
        "checks": len(results),
        "passed": len(passed) == len(results),
        "messages": [r.message for r in results if not r.passed],
        "grades": grades,
        "flips": flips,
        "figure": statistics.median(figures) if figures else None,
        "figures": figures,
        "fraction": statistics.median(fractions) if fractions else None,
        "fractions": fractions,
        "value": statistics.median(values) if values else None,
        "timings": [check_timing(t) for t in timings],
    }


def _not_run(wrong: Any, limit: str) -> dict[str, Any]:
    """A wrong/ file's row where its declared limit holds: listed with the limit, not checked."""
    return {
        "name": wrong.name,
        "expect": wrong.expect,
        "rejected": False,
        "message_ok": False,
        "limit": limit,
        "message": "not run here: its shortcut is one only the emulator or the CPU path names",
        "seconds": 0.0,
    }


async def _checks(checker: Checker, ex: Any, path: Any, seed: int, n: int) -> list[Any]:
    return [(await checker.check(ex, path, seed + k))[0] for k in range(n)]


@contextlib.contextmanager
def busy_core() -> Iterator[int]:
    """A process that keeps one CPU core busy for as long as the block runs; yields its pid.
    Ended by its pid, which this started."""
    proc = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


async def _run(
    quick: bool,
    device: int,
    repeat: int,
    only: list[str],
    soak: int,
    on_part: Callable[[dict[str, Any]], None] | None = None,
    soak_only: bool = False,
) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    soaked: list[dict[str, Any]] = []

    def part() -> None:
        if on_part is not None:
            on_part(
                {
                    "quick": quick,
                    "repeat": repeat,
                    "exercises": entries,
                    "soak": soaked,
                    "soak_only": soak_only,
                    "partial": True,
                }
            )

    async with Checker(device=device, quick=quick) as checker:
        hello = await checker.client.wait_ready(600)
        inv = Inventory.from_dict(hello["inventory"])
        gpu = any(d.kind == "cuda" for d in inv.devices)
        catalog = [ex for ex in load_catalog() if not only or ex.id in only]
        for ex in catalog:
            why = ex.unavailable(inv)
            if why:
                entries.append({"exercise": ex.id, "order": ex.order, "skipped": why})
                continue
            if soak_only:
                continue  # prepared where its soak begins
            sys.stderr.write(f"  exercise {ex.id}\n")
            prepare_s = await checker.prepare(ex)
            first, first_s = await checker.check(ex, ex.solution_path, SEED)
            if ex.ranked:
                # a learner edits between checks: the worker, idle, starts the ranks the next
                # check takes (gpulab.core.ranks, "standing by"); back to back it could not
                await asyncio.sleep(EDIT_PAUSE_S)
            again, repeat_s = await checker.check(ex, ex.solution_path, SEED + 1)
            refs = [first, again] + await _checks(
                checker, ex, ex.solution_path, SEED + 2, repeat - 2
            )
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
                limit = (w.emulator_only or w.cpu_only) if gpu else ""
                if limit:
                    # a declared limit (its file's second line says why) is listed, not run: on
                    # an H200 histogram's four one-thread walks ran to the check's 60 s limit
                    # each, 376 s of the bench, and a cpu-only shortcut may not run at all
                    wrongs.append(_not_run(w, limit))
                    continue
                # The first wrong case decides; a message of another family there (a later case
                # raised the one the file names) is checked whole, as a learner's would be
                got, seconds = await checker.check(ex, w.path, SEED, first_failure=True)
                if not got.passed and not w.matches(got.message):
                    got, more = await checker.check(ex, w.path, SEED)
                    seconds += more
                wrongs.append(
                    {
                        "name": w.name,
                        "expect": w.expect,
                        "rejected": not got.passed,
                        "message_ok": w.matches(got.message),
                        "limit": "",
                        "message": got.message,
                        "seconds": seconds,
                    }
                )
            expert = None
            if ex.has_expert:
                expert = series(await _checks(checker, ex, ex.expert_path, SEED + 100, repeat))
            reference = series(refs)
            timing = again.timing or first.timing or {}
            entries.append(
                {
                    "exercise": ex.id,
                    "order": ex.order,
                    "needs": list(ex.needs),
                    "passed": reference["passed"],
                    "message": (next((r for r in refs if not r.passed), again)).message,
                    "grade": again.grade if again.passed else None,
                    "reference_checks": repeat,
                    "false_rejections": reference["messages"],
                    "reference": reference,
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
            part()
        if soak and gpu:
            with busy_core():
                for ex in catalog:
                    if ex.unavailable(inv) or ex.ranked:
                        continue
                    sys.stderr.write(f"  soak {ex.id} x{soak}\n")
                    if soak_only:
                        await checker.prepare(ex)
                    done = await _checks(checker, ex, ex.solution_path, SOAK_SEED, soak)
                    soaked.append({"exercise": ex.id, **series(done)})
                    part()
    return {
        "quick": quick,
        "repeat": repeat,
        "exercises": entries,
        "soak": soaked,
        "soak_only": soak_only,
    }


def check_timing(timing: dict[str, Any]) -> dict[str, Any]:
    """What one check's timing says beyond its fraction: the learner's median, fastest and
    slowest call, how many, and the library's fraction timed in the same check. A check that
    comes out low with its library low too saw a slow GPU; with the library at its usual figure,
    something in the learner's calls. The interval of the fraction of the yardstick, its basis
    and the rounds it took (extended while it straddled a grade line) show whether a grade that
    changed between checks was a certain one."""
    learner = timing.get("learner") or {}
    of_yard = timing.get("of_yardstick") or {}
    return {
        "fraction": timing.get("fraction"),
        "library_fraction": timing.get("library_fraction"),
        "median_s": learner.get("median_s"),
        "min_s": learner.get("min_s"),
        "max_s": learner.get("max_s"),
        "runs": learner.get("runs"),
        "device_state": timing.get("device_state"),
        "lead_us": timing.get("lead_us"),
        "of_yardstick": {k: of_yard.get(k) for k in ("figure", "lo", "hi", "basis", "straddles")},
        "rounds": timing.get("rounds"),
        "extended_rounds": timing.get("extended_rounds"),
        "window": {k: (timing.get("window") or {}).get(k) for k in ("throttled", "shared")},
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
        return _soak_comparisons(part)  # a soak alone (--soak-only), or nothing ran
    wrongs = [w for e in ran for w in e["wrong"] if not w.get("limit")]
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
        timed = [e for e in ran if e["metric"] not in (None, "none")]
        silver = [
            e
            for e in timed
            if e["reference"]["grades"]
            and all(g in ("silver", "gold") for g in e["reference"]["grades"])
        ]
        out.append(
            judge(
                "exercises: reference silver or better in every repeat",
                f"all {len(timed)}",
                float(len(silver)),
                float(len(timed)),
            )
        )
        experts = [e["expert"] for e in ran if e.get("expert")]
        if experts:
            out.append(
                judge(
                    "exercises: expert solutions gold in every repeat",
                    f"all {len(experts)}",
                    float(sum(x["passed"] and set(x["grades"]) == {"gold"} for x in experts)),
                    float(len(experts)),
                )
            )
        flips = sum(e["reference"]["flips"] + (e.get("expert") or {}).get("flips", 0) for e in ran)
        out.append(
            judge(
                "exercises: grade flips between repeats (references and experts)",
                "0",
                float(flips),
                0.0,
                higher=False,
            )
        )
    out += _soak_comparisons(part)
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


def _soak_comparisons(part: dict[str, Any]) -> list[dict[str, Any]]:
    """The soak's claims: no rejection and no grade flip in its reference checks."""
    out: list[dict[str, Any]] = []
    soak = part.get("soak") or []
    if soak:
        checks = sum(s["checks"] for s in soak)
        rejected = sum(len(s["messages"]) for s in soak)
        out.append(
            judge(
                f"exercises: soak, rejections in {checks} reference checks with a core busy",
                "0",
                float(rejected),
                0.0,
                higher=False,
            )
        )
        out.append(
            judge(
                "exercises: soak, grade flips",
                "0",
                float(sum(s["flips"] for s in soak)),
                0.0,
                higher=False,
            )
        )
    return out


def markdown_lines(part: dict[str, Any]) -> list[str]:
    """The exercises part of the Markdown report."""

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.0f}%"

    def grades(x: dict[str, Any] | None) -> str:
        if not x:
            return "-"
        if not x["passed"]:
            return "FAIL"
        fig = "-" if x.get("figure") is None else f"{x['figure']:.2f}"
        return f"{'/'.join(g or '-' for g in x['grades'])} ({fig})"

    if part.get("soak_only"):
        return _soak_lines(part)
    lines = [
        "",
        "## Exercises (reference solutions through the worker)",
        "",
        "Grades per repeat, with the median of the learner's speed over the yardstick's (the "
        "expert, or the reference itself) timed in the same rounds.",
        "",
        *(
            [f"**Cut short:** the run stopped after {len(part['exercises'])} exercise(s).", ""]
            if part.get("partial")
            else []
        ),
        "| exercise | verdict | reference grades (/ yardstick) | expert grades (/ itself) | your code | % ceiling | library % | prepared (once) | first check | repeat | repeat's slowest phases (s) | reference checks passed | wrong rejected | right passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in part["exercises"]:
        if "skipped" in e:
            lines.append(f"| {e['exercise']} | not run: {e['skipped']} | | | | | | | | | | | | |")
            continue
        ok = sum(w["rejected"] and w["message_ok"] for w in e["wrong"] if not w.get("limit"))
        held = [w for w in e["wrong"] if not w.get("limit")]
        n_ref = e.get("reference_checks", 2)
        refs = f"{n_ref - len(e.get('false_rejections', []))}/{n_ref}"
        right = e.get("right", [])
        rights = f"{sum(r['passed'] for r in right)}/{len(right)}"
        value = "-" if e["value"] is None else f"{e['value']:.4g} {e['metric']}"
        prep = e.get("prepare_s")
        prepared = "-" if prep is None else f"{prep:.2f} s"
        lines.append(
            f"| {e['exercise']} | {'pass' if e['passed'] else 'FAIL'} | "
            f"{grades(e.get('reference'))} | {grades(e.get('expert'))} | "
            f"{value} | {pct(e['fraction'])} | {pct(e['library_fraction'])} | "
            f"{prepared} | {e['first_check_s']:.2f} s | {e['repeat_check_s']:.2f} s | "
            f"{slowest(e.get('repeat_phases'))} | {refs} | {ok}/{len(held)} | {rights} |"
        )
    lines += _soak_lines(part)[1:]
    bad = [
        (e["exercise"], w)
        for e in part["exercises"]
        for w in e.get("wrong", [])
        if not (w["rejected"] and w["message_ok"])
    ]
    for ex_id, w in bad:
        if w.get("limit"):
            lines.append(
                f"\n{ex_id}/{w['name']} (a declared limit here: {w['limit']}): {w['message']}"
            )
        else:
            lines.append(f"\n{ex_id}/{w['name']}: expected '{w['expect']}', got: {w['message']}")
    for e in part["exercises"]:
        for message in e.get("false_rejections", []):
            lines.append(f"\n{e['exercise']}/solution.py rejected: {message}")
        for r in e.get("right", []):
            if not r["passed"]:
                lines.append(f"\n{e['exercise']}/right/{r['name']} rejected: {r['message']}")
        x = e.get("expert")
        for message in (x or {}).get("messages", []):
            lines.append(f"\n{e['exercise']}/expert.py rejected: {message}")
    return lines


def _soak_lines(part: dict[str, Any]) -> list[str]:
    """The soak's lines: per exercise, its checks, rejections (with their messages), flips."""
    lines = [""]
    if part.get("soak_only"):
        lines += [
            "## Soak (`--soak-only`): each GPU exercise's reference checked in a row, a core busy",
            "",
            *(
                [f"**Cut short:** the run stopped after {len(part['soak'])} exercise(s).", ""]
                if part.get("partial")
                else []
            ),
        ]
    for s in part.get("soak") or []:
        lines.append(
            f"\nsoak {s['exercise']}: {s['checks']} checks, {len(s['messages'])} rejected, "
            f"{s['flips']} grade flips, grades {sorted(set(s['grades']))}"
        )
        lines += [f"\n{s['exercise']}/solution.py rejected in the soak: {m}" for m in s["messages"]]
    return lines
