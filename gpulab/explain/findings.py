"""Findings, and the card that shows them: one line each, the top suspect first.

A finding is a value, a verdict and what to try, tagged by where its number comes from:

- measured: from a run on this GPU (the graded figure, a launch the grader recorded, the
  driver's occupancy answer);
- static: read from the compiled code (registers, spills, the PTX's instructions);
- estimated: worked out under an assumption the line's detail names (a launch read from the
  source, the SM count of a card, lane 0 aligned to a sector).

`score` ranks findings (about 0 to 5: how much speed the thing can cost); `severity` is its
band: 3 a likely cause of a slow figure, 2 worth fixing, 1 worth trying, 0 information.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

Tag = Literal["measured", "static", "estimated"]
TAGS: tuple[str, ...] = get_args(Tag)
MARKS = {3: "!!", 2: "! ", 1: "? ", 0: "  "}
SHORT_TAG = {"measured": "[m]", "static": "[s]", "estimated": "[e]"}
WIDTH = 80
SOURCE_WIDTH = 100  # the annotated source: code and what was found on each line
_LINE_PREFIX = re.compile(r"^L\d+:?\s*")


def severity_of(score: float) -> int:
    """A score's severity: 0 (fine) to 3 (the main limit)."""
    if score >= 3.0:
        return 3
    if score >= 1.75:
        return 2
    if score >= 0.75:
        return 1
    return 0


@dataclass(kw_only=True)
class Finding:
    """One thing explain found about a kernel: what, the measured value, the verdict and the
    advice. Built with keywords only: a rule reads as what it says."""

    kind: str  # spills, occupancy, waves, coalescing, bank-conflicts, vector-loads, ...
    what: str  # the card's short label
    value: str
    verdict: str
    advice: str = ""
    tag: Tag  # where the number comes from
    score: float = 0.0
    line: int | None = None  # in the learner's file
    kernel: str = ""
    detail: str = ""  # a sentence or two: how it was worked out
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tag not in TAGS:
            raise ValueError(f"tag {self.tag!r} is not one of {TAGS}")

    @property
    def severity(self) -> int:
        """0 (fine) to 3, from the score."""
        return severity_of(self.score)

    def text(self) -> str:
        """value -> verdict -> advice, as one line."""
        parts = [self.value, self.verdict] + ([self.advice] if self.advice else [])
        return " -> ".join(p for p in parts if p)

    def sentence(self) -> str:
        """The finding as it reads beside its line: `line 14: loads stride 32 -> 8x the
        sectors -> make x contiguous [e]` (no "L14" twice)."""
        value = _LINE_PREFIX.sub("", self.value)
        parts = [value, self.verdict] + ([self.advice] if self.advice else [])
        where = f"line {self.line}: " if self.line else ""
        return where + " -> ".join(p for p in parts if p) + " " + SHORT_TAG[self.tag]

    def line_note(self, width: int) -> str:
        """The short note beside a source line: mark, label, verdict and tag."""
        tag = " " + SHORT_TAG[self.tag]
        return fit(f"{MARKS[self.severity]} {self.what}: {self.verdict}", width - len(tag)) + tag

    def card_line(self, width: int = WIDTH) -> str:
        """The finding as one line at most `width` wide, marked by severity."""
        head = f"{MARKS[self.severity]} {self.what:<9} "
        tag = " " + SHORT_TAG[self.tag]
        room = width - len(head) - len(tag)
        body = self.text()
        if len(body) > room:
            body = body[: room - 3].rstrip() + "..."
        return head + body.ljust(room) + tag

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data."""
        return {
            "kind": self.kind,
            "what": self.what,
            "value": self.value,
            "verdict": self.verdict,
            "advice": self.advice,
            "tag": self.tag,
            "severity": self.severity,
            "score": round(self.score, 3),
            "line": self.line,
            "kernel": self.kernel,
            "detail": self.detail,
            "data": self.data,
        }


S = TypeVar("S")


def gather(
    rules: Iterable[Callable[[S], Finding | list[Finding] | None]], subject: S
) -> list[Finding]:
    """Every rule's findings about `subject`, in the rules' order. A rule is a function of what
    is known about one kernel that returns a Finding, a list of them, or None."""
    out: list[Finding] = []
    for rule in rules:
        found = rule(subject)
        if isinstance(found, Finding):
            out.append(found)
        elif found:
            out += found
    return out


@dataclass
class KernelReport:
    """The findings and resources of one kernel."""

    name: str
    line: int  # the factory call's line
    findings: list[Finding] = field(default_factory=list)
    code_line: int | None = None  # the file line of the kernel source's first line
    resources: dict[str, Any] = field(default_factory=dict)
    occupancy: dict[str, Any] | None = None
    launch: dict[str, Any] | None = None
    error: str = ""  # why it could not be explained (a compile error)
    line_findings: list[Finding] = field(default_factory=list)  # Tier 1: per source line

    def file_line(self, kernel_line: int) -> int | None:
        """The learner's file line of line `kernel_line` of this kernel's source."""
        return None if self.code_line is None else self.code_line + kernel_line - 1

    def ranked(self) -> list[Finding]:
        """The findings, most severe first."""
        return sorted(self.findings, key=lambda f: (-f.score, f.kind, f.line or 0))

    @property
    def top(self) -> Finding | None:
        """The most severe finding that matters, or None."""
        ranked = [f for f in self.ranked() if f.severity > 0]
        return ranked[0] if ranked else None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        top = self.top
        return {
            "name": self.name,
            "line": self.line,
            "error": self.error,
            "resources": self.resources,
            "occupancy": self.occupancy,
            "launch": self.launch,
            "top_suspect": top.kind if top else None,
            "findings": [f.to_dict() for f in self.ranked()],
            "line_findings": [f.to_dict() for f in self.line_findings],
        }


@dataclass
class Explanation:
    """Everything `gpulab explain` found in one file: the device assumed and each kernel's
    report."""

    exercise: str
    file: str
    arch: str
    device: str  # "H100 SXM, 132 SMs (assumed for sm_90)"
    tier: int = 0
    figure: Finding | None = None  # the roofline point
    plot: list[str] = field(default_factory=list)
    kernels: list[KernelReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    report: str = ""  # Tier 1: the .ncu-rep kept for Nsight Compute's GUI
    profile_seconds: float = 0.0  # Tier 1: the ncu pass, start to report read
    source: dict[int, str] = field(default_factory=dict)  # file line -> kernel source text

    def on_lines(self) -> dict[int, list[Finding]]:
        """The findings that sit on a line of a kernel's source (severity 1 or more), by file
        line, worst first: the static tier's and, after a pass, the measured per-line ones."""
        out: dict[int, list[Finding]] = {}
        for k in self.kernels:
            for f in [*k.findings, *k.line_findings]:
                if f.line in self.source and f.severity > 0:
                    out.setdefault(f.line, []).append(f)
        return {n: sorted(fs, key=lambda f: -f.score) for n, fs in sorted(out.items())}

    def marks(self) -> dict[int, int]:
        """The worst severity on each marked file line (the editor's gutter)."""
        return {n: fs[0].severity for n, fs in self.on_lines().items()}

    def worst_line(self) -> Finding | None:
        """The finding of the worst line, or None when no line carries one."""
        found = [fs[0] for fs in self.on_lines().values()]
        return max(found, key=lambda f: f.score) if found else None

    def annotated(self, width: int = SOURCE_WIDTH) -> list[str]:
        """The kernels' source, numbered by file line, with what was found beside the lines
        that carry it (the worst first; more on the lines below), at most `width` wide."""
        if not self.source:
            return []
        notes = self.on_lines()
        code_w = max(20, width * 3 // 5)  # the code column on an annotated line
        note_w = width - 7 - code_w - 1
        lines = [
            fit(
                "source (file lines): [s] static, [e] estimate under an assumed launch,"
                " [m] measured",
                width,
            )
        ]
        numbers = sorted(self.source)
        while numbers and not self.source[numbers[0]].strip():
            numbers.pop(0)
        while numbers and not self.source[numbers[-1]].strip():
            numbers.pop()
        for n in numbers:
            code = self.source[n].rstrip().expandtabs(4)
            here = notes.get(n, [])
            mark = MARKS[here[0].severity] if here else "  "
            if not here:
                lines.append(fit(f"{n:>4} {mark}{code}", width))
                continue
            lines.append(
                f"{n:>4} {mark}{fit(code, code_w).ljust(code_w)} {here[0].line_note(note_w)}"
            )
            for f in here[1:]:
                lines.append(" " * (7 + code_w + 1) + f.line_note(note_w))
        worst = self.worst_line()
        if worst is not None:
            lines += textwrap.wrap("worst " + worst.sentence(), width, subsequent_indent="  ")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The explanation as JSON-ready data."""
        worst = self.worst_line()
        return {
            "exercise": self.exercise,
            "file": self.file,
            "arch": self.arch,
            "device": self.device,
            "tier": self.tier,
            "figure": self.figure.to_dict() if self.figure else None,
            "plot": self.plot,
            "kernels": [k.to_dict() for k in self.kernels],
            "notes": self.notes,
            "seconds": round(self.seconds, 4),
            "report": self.report,
            "profile_seconds": round(self.profile_seconds, 2),
            "lines": [
                {"line": n, "code": self.source[n], "findings": [f.to_dict() for f in fs]}
                for n, fs in self.on_lines().items()
            ],
            "worst_line": (
                {"line": worst.line, "sentence": worst.sentence(), "kind": worst.kind}
                if worst is not None
                else None
            ),
        }

    def card(self, width: int = WIDTH) -> list[str]:
        """The text card: a header, the figure, then each kernel's findings, worst first."""
        lines = [fit(f"explain {self.exercise or self.file}: {self.arch}, {self.device}", width)]
        if self.figure is not None:
            lines.append(self.figure.card_line(width))
        lines += self.plot
        for k in self.kernels:
            res = k.resources
            head = f"kernel {k.name} (line {k.line})"
            if res:
                shared = res.get("shared_static", 0) + res.get("shared_dynamic", 0)
                head += (
                    f": {res.get('registers', '?')} regs, {shared} B shared,"
                    f" {res.get('local_bytes', 0)} B local"
                )
            lines.append(fit(head, width))
            if k.error:
                lines.append(fit("   " + k.error, width))
                continue
            ranked = k.ranked()
            for f in ranked:
                lines.append(f.card_line(width))
            if ranked and all(f.severity == 0 for f in ranked):
                lines.append(fit("   nothing stands out in the static tier", width))
        for note in self.notes:
            lines += textwrap.wrap("note: " + note, width, subsequent_indent="  ")
        if self.report:
            lines.append(fit(f"ncu report: {self.report}", width))
        lines.append(
            fit("[s] static: the compiled code (PTX, ptxas)  [e] estimated  [m] measured", width)
        )
        return lines

    def compact(self, width: int = WIDTH, limit: int = 4) -> list[str]:
        """The card under a grade: the worst `limit` findings of all kernels, one line each,
        and a line that says where the numbers come from (fits 80x24 with the verdict)."""
        ranked = sorted(
            ((f, k.name) for k in self.kernels for f in k.findings if f.severity > 0),
            key=lambda fk: -fk[0].score,
        )
        several = len({name for _, name in ranked}) > 1
        out = []
        if self.figure is not None:
            out.append(self.figure.card_line(width))
        for f, name in ranked[:limit]:
            line = f.card_line(width)
            if several:
                line = f.card_line(width - len(name) - 1)
                line = line[:3] + name + " " + line[3:]
            out.append(line)
        errors = [f"kernel {k.name}: {k.error}" for k in self.kernels if k.error]
        out += [fit(e, width) for e in errors[:1]]
        if not ranked and not errors:
            what = "nothing stands out" + (" (measured)" if self.tier else " in the static tier")
            out.append(fit("   " + what, width))
        if self.report:
            out.append(fit(f"ncu report: {self.report}", width))
        return out


def fit(text: str, width: int, mark: str = "...") -> str:
    """`text` cut to `width` characters, ending in `mark` when it was cut."""
    return text if len(text) <= width else text[: width - len(mark)].rstrip() + mark
