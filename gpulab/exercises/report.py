"""Words for a person: a check's verdict, the exercise list. Plain text, no colours, no textual."""

from __future__ import annotations

from typing import Any

from gpulab.exercises.outcome import EMULATED, CheckResult


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
    where = ""
    if result.emulated:  # correctness only: the pass is no grade
        grade, where = "", ", on the CUDA emulator"
    lines = [f"{head}  {name}{grade}  (seed {result.seed}, {result.seconds:.2f} s{where})"]
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


def yardstick_name(timing: dict[str, Any]) -> str:
    """'expert' or 'reference': what the grade was a fraction of ('' without one)."""
    return str((timing.get("yardstick") or {}).get("label") or "")


def ratio_text(timing: dict[str, Any]) -> str:
    """'0.84 [0.82-0.86]': the learner's speed as a fraction of the yardstick's, with its 95%
    interval ('' without a yardstick)."""
    r = timing.get("of_yardstick") or {}
    if r.get("figure") is None:
        return ""
    text = f"{r['figure']:.2f}"
    if r.get("lo") is not None and r.get("hi") is not None:
        text += f" [{r['lo']:.2f}-{r['hi']:.2f}]"
    return text


def grade_basis_lines(timing: dict[str, Any]) -> list[str]:
    """Why the grade is what it is, beyond the figure: a slowed yardstick graded against its
    record, an interval still holding a grade line after the extra rounds, a throttled window."""
    out = []
    yard = timing.get("yardstick") or {}
    if yard.get("slowed"):
        out.append(str(yard["slowed"]))
    r = timing.get("of_yardstick") or {}
    if r.get("straddles"):
        lines = ", ".join(f"{v:.2f}" for v in r["straddles"])
        out.append(
            f"after {timing.get('rounds')} rounds the interval still holds the grade line "
            f"{lines}: graded by the median"
        )
    window = timing.get("window") or {}
    yard_name = yardstick_name(timing) or "yardstick"
    if window.get("throttled"):
        how = ", ".join(window.get("throttle") or [])
        again = " (timed again; it held)" if timing.get("retimed") else ""
        out.append(
            f"the GPU was held back while timed: {how}{again}; yours and the "
            f"{yard_name} ran in the same rounds, so the ratio stands"
        )
    if window.get("shared"):
        again = " (timed again; it was still there)" if timing.get("retimed") else ""
        out.append(
            f"another process used this GPU while it was timed: {others_text(window)}{again}; "
            f"yours and the {yard_name} ran in the same rounds, so the ratio stands, but every "
            "figure is below what this GPU gives one program alone"
        )
    return out


def others_text(window: dict[str, Any]) -> str:
    """'pid 4242 (python3, up to 85%)': the processes that shared the GPU in a timed window."""
    parts = []
    for o in window.get("others") or []:
        what = ", ".join(x for x in (o.get("name") or "", f"up to {o['percent']}%") if x)
        parts.append(f"pid {o['pid']} ({what})")
    return ", ".join(parts)


def clocks_text(timing: dict[str, Any]) -> str:
    """'SM 1980 MHz, memory 2619 MHz, 412 W, 45 C, no throttling': the window's readings."""
    w = timing.get("window") or {}
    if w.get("na") or not w:
        state = timing.get("device_state") or {}
        return f"n/a ({w.get('na') or state.get('na') or 'not read'})"

    def span(d: Any, unit: str) -> str:
        if not d:
            return "n/a"
        return f"{d['min']} {unit}" if d["min"] == d["max"] else f"{d['min']}-{d['max']} {unit}"

    parts = [
        f"SM {span(w.get('sm_clock_mhz'), 'MHz')}",
        f"memory {span(w.get('mem_clock_mhz'), 'MHz')}",
    ]
    if w.get("power_w") is not None:
        parts.append(f"{w['power_w']:.0f} W")
    if w.get("temperature_c") is not None:
        parts.append(f"{w['temperature_c']} C")
    parts.append(", ".join(w.get("throttle") or []) or "no throttling")
    if w.get("shared"):
        parts.append(f"shared with {others_text(w)}")
    return ", ".join(parts)


def timing_lines(timing: dict[str, Any] | None) -> list[str]:
    """The timing block for the terminal: the figure, the yardstick it is graded against, the
    library and the ceiling, the ratio with its interval, and the GPU's clocks while timed."""
    if not timing:
        return []
    unit = timing["metric"]
    ceiling = timing.get("ceiling") or {}
    yard = timing.get("yardstick") or {}
    label = yardstick_name(timing)
    rounds = timing.get("rounds") or timing["learner"]["runs"]
    beside = f", interleaved with our {label} solution" if label else ""
    lines = [f"  speed ({timing.get('note', '')}; {rounds} rounds{beside}):"]
    lines.append(
        f"    your code   {_num(timing['learner']['value'], unit):>16}   "
        f"{_pct(timing.get('fraction'))} of the {ceiling.get('name', '')} ceiling"
    )
    if yard:
        lines.append(
            f"    {label:<11} {_num(yard.get('value'), unit):>16}   {_pct(yard.get('fraction'))}"
            f"   (our {yard.get('file')}, same rounds)"
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
    if grades and label:
        steps = ", ".join(f"{g} {v:.2f}" for g, v in grades.items())
        lines.append(
            f"    yours / {label}: {ratio_text(timing)} (median and 95% interval over the rounds)"
            f" -> {timing.get('grade')}; grades: {steps} of the {label}"
        )
    for line in grade_basis_lines(timing):
        lines.append(f"    {line}")
    lines.append(f"    GPU while timed: {clocks_text(timing)}")
    if timing.get("lead_us"):
        lines.append(
            f"    timed on the GPU: a {timing['lead_us']:.0f} us spin ahead of each call hides "
            "its launch"
        )
    if timing.get("quick"):
        lines.append("    (quick mode: small inputs, few runs; not a real grade)")
    return lines


NO_CUPY = "No GPU with CuPy here"  # why the CUDA C exercises run on the emulator, mostly


def standing(row: dict[str, Any]) -> str:
    """An exercise's state for the list: "passing, best gold (81% of ceiling)", "passed on the
    emulator" (correctness only: never a grade), "failing (passed before)", and where it runs on
    the emulator, said so."""
    state = row["state"]
    if row["best_grade"]:
        frac = row.get("best_fraction")
        state += f", best {row['best_grade']}" + (
            f" ({100 * frac:.0f}% of ceiling)" if frac else ""
        )
    elif row.get("emulator_passed"):
        state = (
            "passed on the emulator" if state == "passing" else f"{state} (passed on the emulator)"
        )
    elif row["passed_ever"] and state != "passing":
        state += " (passed before)"
    if row.get("emulated") and not row.get("emulator_passed") and not row["best_grade"]:
        state += ", on the emulator"
    return state


def list_lines(
    rows: list[dict[str, Any]], workspace: str, device: str, no_cupy: str = NO_CUPY
) -> list[str]:
    """The `gpulab ex list` table: each exercise, its state and why it cannot run here;
    `no_cupy` says why the CUDA C exercises run on the emulator, where they do."""
    lines = [f"Exercises  (your files: {workspace})", f"Device: {device}"]
    if any(r.get("emulated") for r in rows):
        lines.append(f"{no_cupy}: the CUDA C exercises run on the emulator, {EMULATED}")
    lines.append("")
    for r in rows:
        state = r["unavailable"] or standing(r)
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
