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

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

Tag = Literal["measured", "static", "estimated"]
TAGS: tuple[str, ...] = get_args(Tag)
MARKS = {3: "!!", 2: "! ", 1: "? ", 0: "  "}
SHORT_TAG = {"measured": "[m]", "static": "[s]", "estimated": "[e]"}
WIDTH = 80


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
    resources: dict[str, Any] = field(default_factory=dict)
    occupancy: dict[str, Any] | None = None
    launch: dict[str, Any] | None = None
    error: str = ""  # why it could not be explained (a compile error)

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

    def to_dict(self) -> dict[str, Any]:
        """The explanation as JSON-ready data."""
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
                head += (
                    f": {res.get('registers', '?')} regs, {res.get('shared_static', 0)} B shared,"
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
