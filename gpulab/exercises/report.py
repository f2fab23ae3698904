"""Words for a person: a check's verdict, the exercise list. Plain text, no colours, no textual."""

from __future__ import annotations

from typing import Any

from gpulab.exercises.run_check import CheckResult


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "TFLOP/s":
        return f"{value:.2f} {unit}" if value >= 1 else f"{value * 1e3:.1f} GFLOP/s"
    return f"{value:,.1f} {unit}"


def _pct(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{100 * fraction:.0f}%"


def short_case(name: str) -> str:
    """An input set's name without its description: "n=31 (odd: ...)" -> "n=31". Lists of the
    sets use it (eight descriptions filled six lines of an 80x24 verdict); the failed set, the
    one a learner reads, keeps its whole name in the message."""
    return name.split(" (", 1)[0]


def verdict_lines(result: CheckResult, *, name: str, replay: bool = True) -> list[str]:
    """The check's verdict for the terminal: PASS or FAIL, the grade, each case and how to replay
    the seed."""
    head = "PASS" if result.passed else "FAIL"
    grade = f", grade {result.grade}" if result.passed and result.grade else ""
    lines = [f"{head}  {name}{grade}  (seed {result.seed}, {result.seconds:.2f} s)"]
    lines.append(f"  {result.message}")
    ran = [c for c in result.cases if c.passed is not None]
    if ran:
        marks = ", ".join(f"{short_case(c.name)} {'ok' if c.passed else 'WRONG'}" for c in ran)
        lines.append(f"  input sets: {marks}")
    if not result.passed and result.max_error is not None and result.max_error == result.max_error:
        lines.append(f"  max error {result.max_error:.3g}")
    if result.restored:
        shown = ", ".join(result.restored[:5]) + (" ..." if len(result.restored) > 5 else "")
        lines.append(f"  note: your code changed {shown}; gpulab put them back")
    lines += timing_lines(result.timing)
    spent = phases_line(result)
    if spent:
        lines.append(f"  {spent}")
    if not result.passed and replay:
        lines.append(f"  replay these inputs: gpulab ex check {name} --seed {result.seed}")
    return lines


SLOW_CHECK_S = 1.0  # a check this long says where its time went


def phases_line(result: CheckResult, *, top: int = 4) -> str:
    """'where the 2.10 s went: compare 0.61 s, runs 0.40 s, ...' for a check of SLOW_CHECK_S or
    more (the largest phases, those of 5% or more); empty for a quick one."""
    phases = result.phases or {}
    if result.seconds < SLOW_CHECK_S or not phases:
        return ""
    big = sorted(
        ((s, name) for name, s in phases.items() if s >= 0.05 * result.seconds), reverse=True
    )[:top]
    if not big:
        return ""
    parts = ", ".join(f"{name} {s:.2f} s" for s, name in big)
    return f"where the {result.seconds:.2f} s went: {parts}"


def timing_lines(timing: dict[str, Any] | None) -> list[str]:
    """The timing block for the terminal: the figure, its ceiling and the peer it was compared
    with."""
    if not timing:
        return []
    unit = timing["metric"]
    ceiling = timing.get("ceiling") or {}
    lines = [f"  speed ({timing.get('note', '')}, median of {timing['learner']['runs']} runs):"]
    lines.append(
        f"    your code   {_num(timing['learner']['value'], unit):>16}   "
        f"{_pct(timing.get('fraction'))} of the {ceiling.get('name', '')} ceiling"
    )
    lib = timing.get("library")
    if lib:
        lines.append(
            f"    {lib['name']:<11} {_num(lib['value'], unit):>16}   "
            f"{_pct(timing.get('library_fraction'))}"
        )
    if ceiling.get("value"):
        lines.append(
            f"    ceiling     {_num(ceiling['value'], unit):>16}   measured on {ceiling.get('device')}"
        )
    else:
        lines.append(f"    ceiling     n/a: {ceiling.get('why') or 'not calibrated'}")
    if ceiling.get("note"):
        lines.append(f"    above 100%: {ceiling['note']}")
    if timing.get("suspect"):
        lines.append(f"    {timing['suspect']}")
    grades = timing.get("grades") or {}
    if grades:
        steps = ", ".join(f"{g} {100 * v:.0f}%" for g, v in grades.items())
        lines.append(f"    grades: {steps} of the ceiling")
    state = timing.get("device_state") or {}
    if state.get("temperature_c") is not None or state.get("sm_clock_mhz") is not None:
        temp = state.get("temperature_c")
        clock = state.get("sm_clock_mhz")
        lines.append(
            f"    GPU: {'n/a' if temp is None else f'{temp} C'}, SM clock "
            f"{'n/a' if clock is None else f'{clock} MHz'}"
            + (f" ({state['na']})" if state.get("na") else "")
        )
    else:
        lines.append(f"    GPU temperature and clock: n/a ({state.get('na') or 'not read'})")
    if timing.get("lead_us"):
        lines.append(
            f"    timed on the GPU: a {timing['lead_us']:.0f} us spin ahead of each call hides "
            "its launch"
        )
    if timing.get("quick"):
        lines.append("    (quick mode: small inputs, few runs; not a real grade)")
    return lines


def list_lines(rows: list[dict[str, Any]], workspace: str, device: str) -> list[str]:
    """The `gpulab ex list` table: each exercise, its state and why it cannot run here."""
    lines = [f"Exercises  (your files: {workspace})", f"Device: {device}", ""]
    for r in rows:
        if r["unavailable"]:
            state = r["unavailable"]
        else:
            state = r["state"]
            if r["best_grade"]:
                frac = r.get("best_fraction")
                state += f", best {r['best_grade']}" + (
                    f" ({100 * frac:.0f}% of ceiling)" if frac else ""
                )
            elif r["passed_ever"] and r["state"] != "passing":
                state += " (passed before)"
        lines.append(f"{r['order']:>3}  {r['id']:<26} {state}")
        lines.append(f"     {r['title']}")
    current = next((r for r in rows if r["state"] != "passing" and not r["unavailable"]), None)
    if current:
        lines += [
            "",
            f"Next: edit {current['path']}",
            f"      then: gpulab ex watch  (or gpulab ex check {current['id']})",
        ]
    return lines
