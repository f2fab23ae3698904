"""Tier 2: compute-sanitizer's memcheck, then racecheck, over the learner's kernel on a small case.

`sanitize()` runs `compute-sanitizer --tool memcheck` and then `--tool racecheck` around a fresh
Python process (target.py) that calls the learner's function on the check's timing inputs at a
small size (about 1 MB: the tools slow a kernel down a hundred times or more) with CuPy's memory
pool off and PyTorch's caching allocator off: a pool hands out slices of larger blocks, so a
write past the end of an array lands in memory the sanitizer counts as allocated and is not
reported. target.py compiles every RawKernel with -lineinfo, so an error names a source line,
which `first_error()` maps back to the learner's file.

Everything after the run is a pure function of the tool's text (`parse()`): the CPU tests feed it
output recorded on a GPU (tests/fixtures/explain/sanitizer/).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpulab.core import nvtools
from gpulab.explain import tools

PREFIX = re.compile(r"^=========\s?")
_ERROR_HEAD = re.compile(
    r"^(Invalid __\w+__ (?:read|write|atomic)[^\n]*|Misaligned[^\n]*|Out-of-range[^\n]*"
    r"|Program hit[^\n]*|Cuda API error[^\n]*|Malloc/Free error[^\n]*|Barrier error[^\n]*"
    r"|(?:Error|ERROR|Warning|WARNING): (?:Race|Potential)[^\n]*)"
)
_AT = re.compile(
    r"^\s*at (?:0x[0-9a-f]+ in )?([A-Za-z_][\w:<>, ]*?)(?:\+0x[0-9a-f]+)?(?: in (\S+?):(\d+))?\s*$"
)
_AT_LOOSE = re.compile(
    r"\bat (?:0x[0-9a-f]+ in )?([A-Za-z_]\w*)(?:\([^)]*\))?(?:\+0x[0-9a-f]+)?(?: in (\S+?):(\d+))?"
)
_THREAD = re.compile(r"by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
_ADDRESS = re.compile(r"(?:Address|Access (?:at|to)) (0x[0-9a-f]+)(.*)")
_RACE_BLOCK = re.compile(r"in block \((\d+),(\d+),(\d+)\)")
_RACE_THREAD = re.compile(
    r"(Read|Write) Thread \((\d+),(\d+),(\d+)\) at (?:0x[0-9a-f]+ in )?(\S+?)(?: in (\S+?):(\d+))?\s*$"
)
_RACE_BETWEEN = re.compile(
    r"Race reported between (\w+) access at (?:0x[0-9a-f]+ in )?(\S+?)(?: in (\S+?):(\d+))?\s*$"
)
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazard")


@dataclass
class SanitizerError:
    """The first error a tool reported, in the words and numbers a person needs."""

    tool: str  # memcheck, racecheck
    what: str  # "Invalid __global__ write of size 4 bytes"
    kernel: str = ""
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None
    address: str = ""
    where: str = ""  # "is 4 bytes after the nearest allocation ... of size 1024 bytes"
    source_file: str = ""
    source_line: int | None = None  # in the kernel's source (with -lineinfo)
    file_line: int | None = None  # in the learner's file, where the source's lines are known
    other: str = ""  # racecheck: the other access
    other_line: int | None = None  # its line in the kernel's source
    other_file_line: int | None = None  # and in the learner's file

    def text(self) -> str:
        """One line: what, the kernel, where, who."""
        parts = [f"{self.tool}: {self.what}"]
        if self.kernel:
            parts.append(f"in {self.kernel}")
        if self.file_line is not None:
            parts.append(f"at line {self.file_line} of your file")
        elif self.source_line is not None:
            parts.append(f"at line {self.source_line} of the kernel source")
        if self.thread is not None and self.block is not None:
            parts.append(f"thread {_t(self.thread)} of block {_t(self.block)}")
        elif self.block is not None:
            parts.append(f"block {_t(self.block)}")
        if self.address:
            parts.append(f"address {self.address}")
        line = ", ".join(parts)
        if self.where:
            line += f" ({self.where})"
        if self.other:
            line += f"; the other access: {self.other}"
            if self.other_file_line is not None:
                line += f" at line {self.other_file_line}"
            elif self.other_line is not None:
                line += f" at kernel line {self.other_line}"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "what": self.what,
            "kernel": self.kernel,
            "block": list(self.block) if self.block else None,
            "thread": list(self.thread) if self.thread else None,
            "address": self.address,
            "where": self.where,
            "source_file": self.source_file,
            "source_line": self.source_line,
            "file_line": self.file_line,
            "other": self.other,
            "other_line": self.other_line,
            "other_file_line": self.other_file_line,
            "text": self.text(),
        }


def _t(v: tuple[int, int, int]) -> str:
    return "(" + ",".join(str(x) for x in v) + ")"


@dataclass
class ToolRun:
    tool: str
    errors: int  # the summary's count (0: clean)
    first: SanitizerError | None
    seconds: float = 0.0
    note: str = ""  # the process itself failed (one line)
    raw: str = ""  # the tool's output as it printed it

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "errors": self.errors,
            "first": self.first.to_dict() if self.first else None,
            "seconds": round(self.seconds, 2),
            "note": self.note,
        }


@dataclass
class Sanitized:
    runs: list[ToolRun] = field(default_factory=list)

    @property
    def first(self) -> SanitizerError | None:
        return next((r.first for r in self.runs if r.first is not None), None)

    @property
    def no_errors(self) -> bool:
        return all(r.errors == 0 and not r.note for r in self.runs)

    def lines(self) -> list[str]:
        out = []
        for r in self.runs:
            if r.note:
                out.append(f"{r.tool}: {r.note}")
            elif r.errors == 0:
                out.append(f"{r.tool}: no errors ({r.seconds:.1f} s)")
            else:
                head = r.first.text() if r.first else "errors (no detail parsed)"
                out.append(f"{head} [{r.errors} in all]")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"runs": [r.to_dict() for r in self.runs], "clean": self.no_errors}


def _strip(text: str) -> list[str]:
    return [PREFIX.sub("", ln.rstrip()) for ln in text.splitlines() if ln.startswith("=========")]


def _ints(m: re.Match[str], start: int) -> tuple[int, int, int]:
    return (int(m.group(start)), int(m.group(start + 1)), int(m.group(start + 2)))


def parse(text: str, tool: str) -> tuple[int, SanitizerError | None]:
    """(error count, the first error) from compute-sanitizer's text output."""
    lines = _strip(text)
    count = 0
    for ln in lines:
        m = _SUMMARY.search(ln) or _RACE_SUMMARY.search(ln)
        if m:
            count = max(count, int(m.group(1)))
    first: SanitizerError | None = None
    for i, ln in enumerate(lines):
        head = ln.strip()
        if not _ERROR_HEAD.match(head):
            continue
        err = SanitizerError(tool, head.rstrip(":").strip())
        body = lines[i + 1 : i + 12]
        if "Race reported between" in head:
            m = _RACE_BETWEEN.search(head)
            if m:
                err.what = f"race between a {m.group(1).lower()} and another access"
                err.kernel = _base(m.group(2))
                if m.group(4):
                    err.source_file, err.source_line = m.group(3), int(m.group(4))
            for b in body:
                m2 = re.search(
                    r"and (\w+) access at (?:0x[0-9a-f]+ in )?(\S+?)(?: in (\S+?):(\d+))?\s",
                    b + " ",
                )
                if m2:
                    err.other = f"a {m2.group(1).lower()}" + (
                        f" at kernel line {m2.group(4)}" if m2.group(4) else ""
                    )
                    break
        elif "hazard" in head.lower():
            m = _RACE_BLOCK.search(head)
            if m:
                err.block = _ints(m, 1)
            hm = re.search(r"(\w+) hazard detected at (__\w+__ )?(0x[0-9a-f]+)", head)
            if hm:
                err.what = (
                    f"potential {hm.group(1)} hazard on {(hm.group(2) or '').strip() or 'memory'}"
                )
                err.address = hm.group(3)
            threads = [t for t in (_RACE_THREAD.search(b.strip()) for b in body) if t is not None]
            if threads:
                t0 = threads[0]
                err.thread = _ints(t0, 2)
                err.kernel = _base(t0.group(5))
                if t0.group(7):
                    err.source_file, err.source_line = t0.group(6), int(t0.group(7))
                if len(threads) > 1:
                    t1 = threads[1]
                    err.other = f"a {t1.group(1).lower()} by thread {_t(_ints(t1, 2))}"
                    err.other_line = int(t1.group(7)) if t1.group(7) else None
        else:
            for b in body:
                s = b.strip()
                if not s or _ERROR_HEAD.match(s):
                    break
                if s.startswith("at ") and not err.kernel:
                    m = _AT_LOOSE.search(s)
                    if m:
                        err.kernel = _base(m.group(1))
                        if m.group(3):
                            err.source_file, err.source_line = m.group(2), int(m.group(3))
                m = _THREAD.search(s)
                if m:
                    err.thread, err.block = _ints(m, 1), _ints(m, 4)
                m = _ADDRESS.search(s)
                if m:
                    err.address = m.group(1)
                    rest = m.group(2).strip()
                    if rest:
                        err.where = rest.removeprefix("is ").strip()
                elif s.startswith("and is ") or s.startswith("is "):
                    more = s.removeprefix("and ").removeprefix("is ").strip()
                    err.where = f"{err.where}: {more}" if err.where else more
        first = err
        break
    if first is not None and count == 0:
        count = 1
    return count, first


def _base(name: str) -> str:
    """A kernel's name from 'transpose+0x1b0' or 'transpose(float const*, ...)'."""
    return re.split(r"[+(]", name, maxsplit=1)[0].strip()


def map_line(err: SanitizerError, code_lines: dict[str, int]) -> None:
    """Set err.file_line from the kernel's source line and where its source starts in the
    learner's file (`code_lines`: kernel name -> the file line of the source's first line)."""
    start = code_lines.get(err.kernel)
    if start is None:
        return
    if err.source_line is not None:
        err.file_line = start + err.source_line - 1
    if err.other_line is not None:
        err.other_file_line = start + err.other_line - 1


TOOLS = (
    ("memcheck", ["--tool", "memcheck", "--show-backtrace", "device"]),
    (
        "racecheck",
        ["--tool", "racecheck", "--racecheck-report", "hazard", "--show-backtrace", "device"],
    ),
)


def sanitize(
    target: Sequence[str],
    *,
    code_lines: dict[str, int] | None = None,
    exe: str | None = None,
    on_progress: Callable[[str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    timeout: float = 180.0,
) -> Sanitized:
    """memcheck, then racecheck, around `target` (tools.target_argv with a small fill).
    RuntimeError (one line) when compute-sanitizer is missing; gpulab.core.errors.Cancelled on cancel."""
    path = exe or nvtools.find("compute-sanitizer")
    if path is None:
        raise RuntimeError("compute-sanitizer not found: " + nvtools.FIX["compute-sanitizer"])
    out = Sanitized()
    say = on_progress or (lambda _s: None)
    env = tools.python_env()
    for name, opts in TOOLS:
        say(f"{name}: running your kernel under compute-sanitizer")
        argv = [path, *opts, "--print-limit", "20", *target]
        ran = tools.run(argv, env=env, cancel=cancel, timeout=timeout)
        count, first = parse(ran.out + ran.err, name)
        if first is not None and code_lines:
            map_line(first, code_lines)
        note = ""
        if first is None and ran.rc != 0:
            why = [ln for ln in (ran.err + ran.out).splitlines() if "gpulab-target:" in ln]
            note = (
                why[-1].split("gpulab-target:", 1)[1].strip()
                if why
                else f"exited with {ran.rc}: " + (ran.err.strip().splitlines() or ["?"])[-1][:200]
            )
        out.runs.append(ToolRun(name, count, first, ran.seconds, note, ran.out + ran.err))
    return out
