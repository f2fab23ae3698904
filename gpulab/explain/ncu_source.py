"""Tier 1 by source line: Nsight Compute's source counters, read from its CSV.

The pass collects the SourceCounters section on kernels compiled with `-lineinfo`;
`ncu --import REPORT --csv --page source --print-source cuda,sass` prints them. The layout (as
Nsight Compute's CLI documents and prints it): for each kernel, a `"File Path",<file>` row, a
`"Function Name",<kernel>` row, a header row (`"Line No","Source","Address","Source",<metric
columns>...`), then a row per CUDA source line, its line number set and its metrics summed over
its instructions, each followed by rows of its SASS instructions, their line number empty. Only
the CUDA lines are read here. The metrics used, by their column titles:

- `L2 Theoretical Sectors Global`, `... Ideal`, `... Excessive`: the sectors a line's global
  accesses moved, the ones their bytes needed, and the difference;
- `L1 Wavefronts Shared`, `... Ideal`, `... Excessive`: the same for shared memory;
- `L2 Theoretical Sectors Local`: local-memory traffic (spills, arrays indexed at run time);
- `Divergent Branches`, `Instructions Executed`, `Thread Instructions Executed`;
- `Warp Stall Sampling (All Samples)`: where warps were found waiting;
- `Access Operation`: what the line's memory instructions do (`Load(8)`, `Store`, ...).

A line's SASS rows are read for one figure: the most times one of its instructions ran (its
`Instructions Executed`), so a line's divergent branches can be set against the times its
branch ran: once in 131,072 runs (a loop's last trip) is not a warp split in two.

`parse` and `findings` are pure functions of that text: tests/fixtures/explain/ncu/ holds pages
recorded by passes on an H200 (`expert-*`, tests/test_explain_tier1_gpu.py with
GPULAB_EXPLAIN_RECORD) and two built by hand in this layout (`strided`, `divergent`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field

from gpulab.explain.findings import Finding

SECTORS = "L2 Theoretical Sectors Global"
WAVEFRONTS = "L1 Wavefronts Shared"
LOCAL = "L2 Theoretical Sectors Local"
DIVERGENT = "Divergent Branches"
EXECUTED = "Instructions Executed"
THREADS = "Thread Instructions Executed"
SAMPLES = ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)")
WORTH = 0.05  # of the kernel's total: a line that moves less than this is not named
IDLE = 0.125  # of all lane slots idle (4 of 32): where lanes idling starts to cost
SPLIT = 0.1  # of a branch's runs divergent: under this, a tail (a loop's last trip), not a habit
ISSUE_BUSY = 40.0  # % of the SM's peak (sm__throughput): under it, issue slots are to spare


@dataclass
class SourceLine:
    """One CUDA source line of a kernel and its counters."""

    line: int  # in the kernel's source, as compiled
    code: str
    metrics: dict[str, float] = field(default_factory=dict)
    ops: str = ""  # Access Operation: "Load(8)", "Store", "Load(2),Store", ...
    runs: float = 0.0  # the most times one of its SASS instructions ran (0: no SASS rows)

    @property
    def loads_only(self) -> bool:
        return "Load" in self.ops and "Store" not in self.ops

    def get(self, key: str) -> float:
        return self.metrics.get(key, 0.0)


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if t in ("", "-", "n/a"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse(text: str) -> dict[str, list[SourceLine]]:
    """The CUDA lines of each kernel in a `--page source --csv` page, by kernel name ("" when
    the page does not name it)."""
    out: dict[str, list[SourceLine]] = {}
    kernel = ""
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].startswith("=="):
            continue
        first = row[0].strip()
        if first in ("File Path", "Kernel Name", "Function Name"):
            if first != "File Path" and len(row) > 1:
                kernel = row[1].strip()
            header = None
            continue
        if first in ("Line No", "#") and "Source" in row:
            header = [c.strip() for c in row]
            continue
        if header is None:
            continue
        number = _number(first)
        cells = dict(zip(header, row, strict=False))
        if number is None:  # a SASS row under its line (or a line without a number)
            ran = _number(cells.get(EXECUTED, ""))
            lines = out.get(kernel)
            if ran is not None and lines and not first:
                lines[-1].runs = max(lines[-1].runs, ran)
            continue
        code = row[header.index("Source")] if len(row) > header.index("Source") else ""
        metrics: dict[str, float] = {}
        for name, cell in zip(header, row, strict=False):
            v = _number(cell)
            if v is not None and name not in ("Line No", "#", "Source", "Address"):
                metrics[name] = v
        ops = cells.get("Access Operation", "").strip()
        line = SourceLine(int(number), code, metrics, "" if ops == "-" else ops)
        out.setdefault(kernel, []).append(line)
    return out


def lines_of(parsed: dict[str, list[SourceLine]], kernel: str) -> list[SourceLine]:
    """The lines of `kernel`: its own block, or the page's only block when it names none."""
    if kernel in parsed:
        return parsed[kernel]
    return parsed.get("", []) if len(parsed) == 1 else []


def issue_weight(issue_busy: float | None) -> float:
    """How much lanes left idle can cost: 1 when the SM's pipes are busy (its issue slots are
    what limits), less in proportion when they are mostly free (the time goes elsewhere)."""
    return 1.0 if issue_busy is None else min(1.0, max(0.0, issue_busy) / ISSUE_BUSY)


def findings(
    lines: list[SourceLine],
    kernel: str,
    file_line: Callable[[int], int | None],
    *,
    load_hit: float = 0.0,
    issue_busy: float | None = None,
) -> list[Finding]:
    """What the counters say about each line, as measured findings on the learner's file lines
    (`file_line` maps a kernel line to one). A line's score is the share of the kernel's traffic
    it wastes, so the line that costs the most comes first.

    The sector counts are theoretical (as if every access missed L1): a load-only line's are
    weighed by the kernel's measured L1 miss rate for global loads (`load_hit`, %), so a small
    table every warp rereads from L1 is not traffic. A divergent branch is weighed by how often
    it splits its warps, by the lanes the whole kernel leaves idle, and by whether issue slots
    are what limits (`issue_busy`: sm__throughput, % of peak)."""
    out: list[Finding] = []
    reach = 1.0 - min(100.0, max(0.0, load_hit)) / 100.0

    def theoretical(x: SourceLine, key: str) -> float:
        return x.get(key) * (reach if x.loads_only else 1.0)

    sectors = sum(theoretical(x, SECTORS) + x.get(LOCAL) for x in lines)
    wavefronts = sum(x.get(WAVEFRONTS) for x in lines)
    samples = {x.line: max((x.get(s) for s in SAMPLES), default=0.0) for x in lines}
    all_samples = sum(samples.values())
    executed = sum(x.get(EXECUTED) for x in lines)
    threads = sum(x.get(THREADS) for x in lines)
    idle = 1.0 - threads / (32.0 * executed) if executed and threads else None
    lanes = 1.0 if idle is None else min(1.0, max(0.0, idle) / IDLE)
    issue = issue_weight(issue_busy)
    for x in lines:
        where = file_line(x.line)
        base = {"kernel_line": x.line, "code": x.code.strip()}
        excess = theoretical(x, SECTORS + " Excessive")
        if sectors and excess / sectors >= WORTH:
            ideal = x.get(SECTORS + " Ideal") or 1.0
            share = excess / sectors
            out.append(
                Finding(
                    kind="line-sectors",
                    what="coalesce",
                    value=f"L{where or x.line} {x.get(SECTORS) / ideal:.1f}x ideal sectors",
                    verdict=f"{share:.0%} of all sectors wasted",
                    advice="make x contiguous",
                    tag="measured",
                    score=4.0 * share,
                    line=where,
                    kernel=kernel,
                    detail=f"This line's global accesses moved {x.get(SECTORS):,.0f} sectors"
                    f" where their bytes needed {ideal:,.0f}: {excess:,.0f} excess, {share:.0%}"
                    " of all the sectors the kernel moved (L2 Theoretical Sectors Global).",
                    data={**base, "sectors": x.get(SECTORS), "ideal": ideal, "excess": excess},
                )
            )
        extra = x.get(WAVEFRONTS + " Excessive")
        if wavefronts and extra / wavefronts >= WORTH:
            ideal = x.get(WAVEFRONTS + " Ideal") or 1.0
            share = extra / wavefronts
            out.append(
                Finding(
                    kind="line-wavefronts",
                    what="banks",
                    value=f"L{where or x.line} {x.get(WAVEFRONTS) / ideal:.1f}x ideal wavefronts",
                    verdict=f"{share:.0%} of shared wavefronts",
                    advice="pad or spread lanes",
                    tag="measured",
                    score=3.0 * share,
                    line=where,
                    kernel=kernel,
                    detail=f"This line's shared accesses took {x.get(WAVEFRONTS):,.0f}"
                    f" wavefronts where {ideal:,.0f} would do (lanes in the same bank):"
                    f" {share:.0%} of all the kernel's shared wavefronts.",
                    data={**base, "wavefronts": x.get(WAVEFRONTS), "ideal": ideal},
                )
            )
        local = x.get(LOCAL)
        if sectors and local / sectors >= WORTH:
            share = local / sectors
            out.append(
                Finding(
                    kind="line-local",
                    what="local mem",
                    value=f"L{where or x.line} {local:,.0f} local sectors",
                    verdict=f"{share:.0%} of all sectors",
                    advice="fewer live values",
                    tag="measured",
                    score=4.0 * share,
                    line=where,
                    kernel=kernel,
                    detail="Local memory (spills, or an array indexed at run time) moved by this"
                    f" line: {share:.0%} of the sectors the kernel moved.",
                    data={**base, "local_sectors": local},
                )
            )
        runs = x.get(EXECUTED)
        if x.get(DIVERGENT) and executed and runs:
            out.append(_divergence(x, where, kernel, base, lanes, idle, issue))
    if all_samples:
        hot, n = max(samples.items(), key=lambda kv: kv[1])
        share = n / all_samples
        if share >= 0.3:
            where = file_line(hot)
            out.append(
                Finding(
                    kind="line-stalls",
                    what="hot line",
                    value=f"L{where or hot} {share:.0%} of stall samples",
                    verdict="warps wait here most",
                    tag="measured",
                    score=0.8,
                    line=where,
                    kernel=kernel,
                    detail="Warp Stall Sampling: where warps were found waiting, sampled over"
                    " the run. The hot line is where time goes, not always what to fix.",
                    data={"kernel_line": hot, "samples": n, "share": share},
                )
            )
    return out


def _divergence(
    x: SourceLine,
    where: int | None,
    kernel: str,
    base: dict[str, object],
    lanes: float,
    idle: float | None,
    issue: float,
) -> Finding:
    """A line whose branch split warps, scored by what the split costs: how often (a habit or
    a loop's last trip), how many lanes the kernel leaves idle in all, whether issue slots are
    scarce. A per-warp `if (lane == 0)` store splits every warp once and costs nothing."""
    divergent = x.get(DIVERGENT)
    threads = x.get(THREADS) / x.get(EXECUTED) if x.get(THREADS) else 32.0
    rate = min(1.0, divergent / x.runs) if x.runs else 1.0
    habit = min(1.0, rate / SPLIT)
    score = 2.5 * habit * lanes * issue
    why = ""
    if habit < 1.0:
        why = f"{rate:.2%} of its runs"
    elif lanes < 1.0 and idle is not None:
        why = f"{idle:.0%} of lanes idle in all"
    elif issue < 1.0:
        why = "issue slots to spare"
    severe = score >= 1.75
    return Finding(
        kind="line-divergence",
        what="diverge",
        value=f"L{where or x.line} {divergent:,.0f} divergent branches",
        verdict="warps split here" + (f", {why}" if why and not severe else ""),
        advice="branch per warp, not per lane" if severe else "",
        tag="measured",
        score=score,
        line=where,
        kernel=kernel,
        detail=f"Warps took both sides of this line's branch {divergent:,.0f} times"
        + (f" in {x.runs:,.0f} runs" if x.runs else "")
        + f" (Divergent Branches); the line ran {threads:.1f} threads an instruction."
        + (
            f" Over the whole kernel {idle:.0%} of lane slots were idle."
            if idle is not None
            else ""
        )
        + (
            " Each warp then runs both paths, one after the other."
            if severe
            else " Too rare, or too cheap here, to be what limits the kernel."
        ),
        data={**base, "divergent": divergent, "threads": threads, "runs": x.runs, "rate": rate},
    )
