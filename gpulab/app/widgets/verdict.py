"""A check's verdict beside the code: each input set, the first wrong element, speed bars, grade.

The words come from the same CheckResult the CLI prints (gpulab.exercises.report); here they are
laid out for a narrow column: one line per input set, and the learner's and the library's
figures as bars against this device's ceiling, with the grade steps marked under them.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from gpulab.exercises.report import (
    _num,
    grade_basis_lines,
    phases_line,
    ratio_text,
    short_case,
    yardstick_name,
)

BAR_WIDTH = 20
GRADE_STYLE = {"gold": "bold yellow", "silver": "bold white", "bronze": "bold #cd7f32"}


def _short(value: Any) -> str:
    if value is None:  # the worker's events carry NaN and inf as null (plain JSON)
        return "NaN or inf"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def bar(fraction: float | None, width: int = BAR_WIDTH) -> str:
    """`███████░░░░` for a fraction of the ceiling (clipped to the bar; the % says the rest)."""
    if fraction is None or fraction != fraction:
        return "·" * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def grade_ruler(grades: dict[str, float], width: int = BAR_WIDTH) -> str:
    """A line under the bars with b, s, g where bronze, silver and gold start."""
    marks = [" "] * (width + 1)
    for name, value in grades.items():
        col = round(max(0.0, min(1.0, value)) * width)
        marks[min(col, width)] = name[0]
    return "".join(marks)


def verdict_text(result: Any) -> Text:
    """The whole verdict of one CheckResult."""
    out = Text()
    if result.passed:
        out.append(" PASS ", style="bold black on green")
        if result.grade and not result.emulated:
            out.append("  grade ")
            out.append(result.grade, style=GRADE_STYLE.get(result.grade, "bold"))
    else:
        out.append(" FAIL ", style="bold white on red")
        if result.kind:
            out.append(f"  {result.kind}", style="bold red")
    if result.emulated:
        out.append("  on the CUDA emulator", style="bold yellow")
    out.append(f"  {result.seconds:.2f} s · seed {result.seed}\n", style="dim")
    out.append(f"{result.message}\n")
    ran = [c for c in result.cases if c.passed is not None]
    # The wrong input set first, with its first wrong element: in a short pane it is what
    # must be in view; the sets that passed follow on one line.
    for case in (c for c in ran if not c.passed):
        out.append(" ✗ ", style="bold red")
        out.append(case.name)
        if case.index is not None:
            out.append(f"\n   first wrong at [{_short(case.index)}]: ")
            out.append(f"expected {_short(case.expected)}", style="green")
            out.append(", ")
            out.append(f"got {_short(case.got)}", style="red")
        if case.wrong:
            out.append(f"\n   {case.wrong:,} elements wrong", style="dim")
        elif case.message and case.index is None and case.message not in result.message:
            out.append(f"\n   {case.message}", style="dim")
        out.append("\n")
    good = [short_case(c.name) for c in ran if c.passed]
    if good:
        out.append(" ✓ ", style="green")
        out.append(" · ".join(good) + "\n")
    if result.restored:
        out.append(f"\nYour code changed {', '.join(result.restored[:3])}; put back.\n", "yellow")
    out.append_text(speed_text(result.timing))
    spent = phases_line(result, top=3)
    if spent:  # last: a slow check explains itself without pushing the verdict out of view
        out.append(f"\n{spent}\n", style="dim")
    return out


def speed_text(timing: dict[str, Any] | None) -> Text:
    """The check's timing: the learner's figure, the yardstick's (the grade is a fraction of
    it, with its interval) and the library's, as bars against this device's ceiling."""
    out = Text()
    if not timing:
        return out
    unit = timing["metric"]
    ceiling = timing.get("ceiling") or {}
    name = ceiling.get("name", "")
    out.append("\nSpeed", style="bold")
    if ceiling.get("value"):
        out.append(f" vs the {name} ceiling {_num(ceiling['value'], unit)}\n")
    else:
        out.append(f"\n ceiling n/a: {ceiling.get('why') or 'not calibrated'}\n", style="yellow")
    rows = [("you", timing.get("learner") or {}, timing.get("fraction"))]
    yard = timing.get("yardstick") or {}
    label = yardstick_name(timing)
    if yard:
        rows.append((label, yard, yard.get("fraction")))
    lib = timing.get("library")
    if lib:
        rows.append((str(lib.get("name") or "library"), lib, timing.get("library_fraction")))
    styles = {"you": "bold cyan", label: "yellow"}
    for who, block, fraction in rows:
        pct = "  n/a" if fraction is None else f"{100 * fraction:4.0f}%"
        out.append(f" {who[:10]:<10} ")
        out.append(bar(fraction), style=styles.get(who, "magenta"))
        out.append(f" {pct} {_num(block.get('value'), unit)}\n")
    grades = timing.get("grades") or {}
    yard_fraction = yard.get("fraction")
    if grades and label:
        if yard_fraction and ceiling.get("value"):
            # the grade lines are fractions of the yardstick: drawn where they fall on its bar
            scaled = {g: v * float(yard_fraction) for g, v in grades.items()}
            out.append(f" {'':<10} {grade_ruler(scaled)}\n", style="dim")
        steps = " ".join(f"{g[0]}={v:.2f}" for g, v in grades.items())
        # how the GPU was timed, on the grades' line: the verdict keeps its height at 80x24
        lead = f" · behind a {timing['lead_us']:.0f} us spin" if timing.get("lead_us") else ""
        out.append(f" you/{label} {ratio_text(timing)} · {steps}{lead}\n", style="dim")
    for line in grade_basis_lines(timing):
        out.append(f" {line}\n", style="yellow")
    if ceiling.get("note"):
        out.append(f" above 100%: {ceiling['note']}\n", style="yellow")
    if timing.get("suspect"):
        out.append(f" {timing['suspect']}\n", style="yellow")
    if timing.get("quick"):
        out.append(" quick mode: small inputs, not a real grade\n", style="dim")
    return out


class VerdictView(Static):
    """Idle text, a check's progress, or its verdict; `shown` says which (tests read it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.shown = "idle"
        self.result: Any = None

    def show_idle(self, text: str) -> None:
        """Show `text` dimmed (no check yet)."""
        self.shown, self.result = "idle", None
        self.update(Text(text, style="dim"))

    def show_progress(self, fraction: float, message: str) -> None:
        """Show a running check's progress bar and step."""
        self.shown = "progress"
        line = Text("Checking…\n", style="bold")
        line.append(bar(fraction), style="cyan")
        line.append(f" {100 * fraction:3.0f}%\n")
        line.append(message, style="dim")
        self.update(line)

    def show_result(self, result: Any) -> None:
        """Show a check's verdict: each test, the timing and the grade."""
        self.shown, self.result = "result", result
        self.update(verdict_text(result))
