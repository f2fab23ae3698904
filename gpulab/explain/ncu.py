"""Tier 1: one Nsight Compute pass over the learner's own kernel, read into findings.

`profile()` runs `ncu` around a fresh Python process (target.py) that builds the exercise's
timing inputs at a representative size (64 MB by default) and calls the learner's function twice;
ncu profiles only kernels named in the learner's file (`--kernel-name regex:^(a|b)$`) and only
in the range the target opens around its last call (`--profile-from-start off`; the target calls
cudaProfilerStart and Stop), so a call that launches one of several kernels (conv2d's expert
picks one by the filter's size) or some kernels twice is profiled as it ran, up to one launch
a named kernel (`--launch-count`). The report
is kept (`.ncu-rep`, for Nsight Compute's GUI) and read back as CSV (`--page raw` for the
metrics, `--page details` for ncu's own rule messages, `--page source` for the counters of each
source line: ncu_source.py), so everything after the run is a pure
function of two CSV texts: `parse_raw()`, `parse_details()`, `findings()`; the CPU tests feed
them CSV recorded on a GPU (tests/fixtures/explain/ncu/).

What is read, per kernel: DRAM throughput as % of peak; bytes used per 32-byte sector of global
loads and stores (coalescing); shared-memory wavefronts per instruction (bank conflicts);
achieved vs theoretical occupancy and its limiter; threads per warp instruction (divergence);
the top two stall reasons; local-memory traffic (spills); the grid's waves; up to three rule
messages. ncu locks clocks and flushes caches between replays, so its durations are not the
graded figure: nothing here grades, it explains.
"""

from __future__ import annotations

import csv
import io
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpulab.core import nvtools
from gpulab.explain import tools
from gpulab.explain.findings import Finding, gather
from gpulab.explain.ncu_source import issue_weight

PERMISSION = "ERR_NVGPUCTRPERM"
PERMISSION_FIX = "GPU counters locked: an admin sets NVreg_RestrictProfilingToAdminUsers=0"
SECTIONS = (
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "WarpStateStats",
    "MemoryWorkloadAnalysis_Tables",
    "SourceCounters",
)
# Read directly, beside the sections' own metrics (a name this ncu lacks is dropped and the
# pass retried: see profile()).
METRICS = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",
    "launch__waves_per_multiprocessor",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "device__attribute_multiprocessor_count",
)
_MISSING_METRIC = re.compile(r"Failed to find metric\s+\"?([A-Za-z0-9_.]+)")
_PROGRESS = re.compile(r"==PROF== Profiling \"([^\"]+)\"")
_PASSES = re.compile(r"(\d+) passes")


class NcuError(RuntimeError):
    """ncu could not profile the kernel; str() is one line for a person."""


class NoPermission(NcuError):
    """ERR_NVGPUCTRPERM: the counters are admin-only on this machine."""

    def __init__(self) -> None:
        super().__init__(PERMISSION_FIX)


@dataclass
class Rule:
    name: str
    kind: str  # OPT, WRN, INF
    message: str
    speedup: float | None = None  # ncu's estimated speedup, % (where it gives one)


@dataclass
class KernelProfile:
    """One profiled launch: its metrics (base units) and ncu's rule messages."""

    name: str
    metrics: dict[str, float | str] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    block: str = ""
    grid: str = ""

    def get(self, key: str) -> float | None:
        v = self.metrics.get(key)
        return v if isinstance(v, float) else None


@dataclass
class Profile:
    """The result of a pass: one KernelProfile per kernel name, the report's path, the time."""

    kernels: list[KernelProfile] = field(default_factory=list)
    report: str = ""
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # metrics this ncu did not know
    raw: str = ""  # the CSV pages, as ncu printed them
    details: str = ""
    source: str = ""  # the source counters by line ("" when this ncu could not print them)


def _number(text: str) -> float | str:
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return text.strip()
    try:
        return float(t)
    except ValueError:
        return text.strip()


def _rows(text: str) -> list[list[str]]:
    """The CSV rows of ncu's output (its ==PROF== and ==WARNING== lines dropped)."""
    body = "\n".join(ln for ln in text.splitlines() if ln.startswith('"'))
    return list(csv.reader(io.StringIO(body)))


def parse_raw(text: str) -> list[KernelProfile]:
    """`ncu --csv --page raw` (--print-units base): a header row, a units row, a row per launch."""
    rows = _rows(text)
    if not rows:
        return []
    header, data = rows[0], rows[1:]
    if data and data[0] and not data[0][0].strip():  # the units row
        data = data[1:]
    out = []
    for row in data:
        rec = dict(zip(header, row, strict=False))
        k = KernelProfile(
            rec.get("Kernel Name", "?"),
            block=rec.get("Block Size", ""),
            grid=rec.get("Grid Size", ""),
        )
        for key, value in rec.items():
            if "__" in key:
                k.metrics[key] = _number(value)
        out.append(k)
    return out


def parse_details(text: str) -> dict[str, list[Rule]]:
    """ncu's rule messages from `ncu --csv --page details`, by kernel name, in report order."""
    rows = _rows(text)
    if not rows:
        return {}
    header = rows[0]
    out: dict[str, list[Rule]] = {}
    seen: set[tuple[str, str, str]] = set()
    for row in rows[1:]:
        rec = dict(zip(header, row, strict=False))
        name = (rec.get("Rule Name") or "").strip()
        message = (rec.get("Rule Description") or "").strip()
        if not name or not message:
            continue
        kernel = rec.get("Kernel Name", "?")
        key = (kernel, name, message)
        if key in seen:
            continue
        seen.add(key)
        speed = _number(rec.get("Estimated Speedup", "") or "")
        out.setdefault(kernel, []).append(
            Rule(
                name,
                (rec.get("Rule Type") or "").strip(),
                message,
                speed if isinstance(speed, float) else None,
            )
        )
    return out


def merge(raw: str, details: str) -> list[KernelProfile]:
    """parse_raw + parse_details, one profile per kernel name (the first launch of each)."""
    rules = parse_details(details)
    out: dict[str, KernelProfile] = {}
    for k in parse_raw(raw):
        if k.name in out:
            continue
        k.rules = rules.get(k.name, [])
        out[k.name] = k
    return list(out.values())


# -- the pass ---------------------------------------------------------------------------------


def reports_dir() -> Path:
    """Where the .ncu-rep files are kept (open them in Nsight Compute's GUI)."""
    from gpulab.core import datadir  # deferred: loaded when used

    return datadir.resolve() / "explain-reports"


def command(
    ncu: str,
    kernels: Sequence[str],
    target: Sequence[str],
    report: Path,
    metrics: Sequence[str] = METRICS,
) -> list[str]:
    """ncu's command line: the learner's kernels only, in the last call's profiler range, one
    report."""
    names = "|".join(re.escape(k) for k in kernels)
    argv = [
        ncu,
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        "--kernel-name",
        f"regex:^({names})$",
        "--launch-count",
        str(len(kernels)),
    ]
    for s in SECTIONS:
        argv += ["--section", s]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    return argv + ["--export", str(report), "--force-overwrite", *target]


def profile(
    kernels: Sequence[str],
    target: Sequence[str],
    *,
    report: Path | None = None,
    ncu: str | None = None,
    on_progress: Callable[[str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    timeout: float = 120.0,
) -> Profile:
    """One ncu pass over `kernels` in the process `target` (tools.target_argv); NoPermission,
    NcuError (in one line) or gpulab.core.errors.Cancelled."""
    exe = ncu or nvtools.find("ncu")
    if exe is None:
        raise NcuError("ncu not found: " + nvtools.FIX["ncu"])
    if not kernels:
        raise NcuError("no kernel to profile: your file compiles no RawKernel or RawModule")
    if report is None:
        folder = reports_dir()
        folder.mkdir(parents=True, exist_ok=True)
        report = folder / f"{kernels[0]}-{time.strftime('%Y%m%d-%H%M%S')}.ncu-rep"
    report = Path(report)
    t0 = time.perf_counter()
    metrics = list(METRICS)
    dropped: list[str] = []
    say = on_progress or (lambda _s: None)

    def on_line(line: str) -> None:
        m = _PROGRESS.search(line)
        if m:
            pct = re.findall(r"(\d+)%", line)
            passes = _PASSES.search(line)
            say(
                f"profiling {m.group(1)}: {pct[-1] if pct else 0}%"
                + (f" ({passes.group(1)} replay passes)" if passes else "")
            )

    say("starting ncu (a fresh process runs your kernel twice)")
    env = tools.python_env()
    for _ in range(4):
        argv = command(exe, kernels, target, report, metrics)
        ran = tools.run(argv, env=env, on_line=on_line, cancel=cancel, timeout=timeout)
        text = ran.out + ran.err
        if PERMISSION in text:
            raise NoPermission()
        missing = [m for m in _MISSING_METRIC.findall(text) if m in metrics]
        if missing:
            dropped += missing
            metrics = [m for m in metrics if m not in missing]
            continue
        break
    else:
        raise NcuError("ncu kept refusing metrics: " + ", ".join(dropped))
    if not report.is_file():
        raise NcuError(_why(text, kernels))
    say("reading the report")
    raw = _import(exe, report, "raw", cancel)
    details = _import(exe, report, "details", cancel)
    profs = merge(raw, details)
    if not profs:
        raise NcuError(_why(text, kernels))
    try:  # by source line: a nicety an older ncu may not print
        source = _import(exe, report, "source", cancel, ("--print-source", "cuda,sass"))
    except NcuError:
        source = ""
    return Profile(
        profs, str(report), time.perf_counter() - t0, argv, dropped, raw, details, source
    )


def _import(
    exe: str,
    report: Path,
    page: str,
    cancel: Callable[[], bool] | None,
    extra: Sequence[str] = (),
) -> str:
    argv = [exe, "--import", str(report), "--csv", "--page", page, "--print-units", "base"]
    argv += list(extra)
    ran = tools.run(argv, cancel=cancel, timeout=60)
    if ran.rc != 0:
        raise NcuError(f"ncu --import {report.name} failed: {_last(ran.err or ran.out)}")
    return ran.out


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "no output"


def _why(text: str, kernels: Sequence[str]) -> str:
    """One line: why ncu made no report."""
    for line in text.splitlines():
        if "gpulab-target:" in line:
            return line.split("gpulab-target:", 1)[1].strip()
    if "No kernels were profiled" in text:
        return (
            f"ncu saw no launch of {', '.join(kernels)} after the first call (does your"
            " function launch its kernel every call?)"
        )
    errors = [ln for ln in text.splitlines() if "==ERROR==" in ln]
    return errors[0].replace("==ERROR==", "ncu:").strip()[:200] if errors else _last(text)


# -- findings ---------------------------------------------------------------------------------

COALESCE_SHARE = 0.25  # of the traffic to L2 wasted by unused bytes: from here a full finding

STALLS = {
    "long_scoreboard": ("memory latency", "more loads in flight"),
    "short_scoreboard": ("waiting on shared memory", "fewer bank conflicts"),
    "barrier": ("waiting at __syncthreads", "more work between barriers"),
    "lg_throttle": ("load/store queue full", "wider loads (float4)"),
    "mio_throttle": ("shared-memory queue full", "fewer shared accesses"),
    "math_pipe_throttle": ("math pipe busy", "compute-bound: good"),
    "wait": ("fixed-latency dependency", "independent work per thread"),
    "not_selected": ("another warp issued", "enough warps: fine"),
    "drain": ("draining stores at exit", "fine at the end"),
    "membar": ("a memory fence", "fewer fences"),
    "branch_resolving": ("resolving branches", "fewer branches"),
    "dispatch_stall": ("dispatcher stalled", "rare; ignore"),
    "no_instruction": ("instruction cache miss", "a smaller unrolled loop"),
    "imc_miss": ("constant cache miss", "fewer distinct constants"),
    "sleeping": ("sleeping (nanosleep)", "fewer sleeps"),
    "tex_throttle": ("texture queue full", "fewer texture loads"),
}
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0f}%"


def _sum(k: KernelProfile, *keys: str) -> float | None:
    vals = [k.get(x) for x in keys]
    have = [v for v in vals if v is not None]
    return sum(have) if have else None


def stalls(k: KernelProfile) -> list[tuple[str, float]]:
    """(reason, warp cycles per issued instruction) for every stall reason, largest first."""
    out = []
    for key, value in k.metrics.items():
        m = _STALL.match(key)
        if m and isinstance(value, float) and m.group(1) not in ("selected",):
            out.append((m.group(1), value))
    return sorted(out, key=lambda r: -r[1])


def _dram(k: KernelProfile) -> float | None:
    dram = k.get("dram__throughput.avg.pct_of_peak_sustained_elapsed")
    if dram is None:
        dram = k.get("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
    return dram


def _at_roof(k: KernelProfile) -> bool:
    dram = _dram(k)
    return dram is not None and dram >= 70.0


def dram(k: KernelProfile) -> Finding | None:
    """DRAM throughput as % of peak, and whether the bytes it moves are all of use."""
    pct = _dram(k)
    if pct is None:
        return None
    verdict = "not the limit"
    if _at_roof(k):
        verdict = "DRAM busy, partly with wasted bytes" if _wasted(k) else "at the memory roof"
    return Finding(
        kind="dram",
        what="dram",
        value=f"{pct:.0f}% of peak",
        verdict=verdict,
        tag="measured",
        kernel=k.name,
        detail="DRAM throughput during the profiled launch, as % of the peak ncu knows"
        " for this GPU (ncu locks clocks: not your graded figure).",
        data={"dram_pct": pct},
    )


def coalescing(k: KernelProfile) -> list[Finding]:
    """Bytes of each 32-byte sector a warp's global loads and stores use, weighed by the share
    of the traffic to L2 the unused bytes make: loads that hit in L1 (a small table every warp
    rereads) cost L2 nothing, and a store of one word a block is a sliver of the kernel's."""
    out = []
    miss = (
        1.0
        - min(100.0, k.get("l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct") or 0.0) / 100.0
    )
    ld = k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") or 0.0
    st = k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum") or 0.0
    to_l2 = ld * miss + st
    for op, word in (("ld", "loads"), ("st", "stores")):
        pct = k.get(f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.pct")
        sectors = k.get(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")
        if pct is None or not sectors or pct >= 80.0:
            continue
        wasted = sectors * (1.0 - pct / 100.0) * (miss if op == "ld" else 1.0)
        share = wasted / to_l2 if to_l2 else 1.0
        weight = min(1.0, share / COALESCE_SHARE)
        out.append(
            Finding(
                kind="coalescing",
                what="coalesce",
                value=f"{word} {32.0 * pct / 100.0:.3g}/32 B a sector",
                verdict="uncoalesced" if weight >= 1.0 else f"{share:.0%} of L2 traffic wasted",
                advice="lane i reads element i" if weight >= 1.0 else "",
                tag="measured",
                score=(1.0 + 4.0 * (1.0 - pct / 100.0)) * weight,
                kernel=k.name,
                detail="smsp__sass_average_data_bytes_per_sector_mem_global_op_"
                f"{op}.pct: the share of each 32-byte sector fetched that the warp used. The"
                f" unused bytes are {share:.0%} of the sectors the kernel moved to or from L2"
                + (" (loads that hit in L1 left out)." if op == "ld" and miss < 1.0 else "."),
                data={"op": op, "pct": pct, "sectors": sectors, "share": share},
            )
        )
    return out


def bank_conflicts(k: KernelProfile) -> Finding | None:
    """Shared-memory wavefronts against the ideal for the same accesses (ncu's own ideal where it
    gives one, else one wavefront per shared instruction, right for 32-bit accesses). The
    bank-conflict counter alone over-counts on sm_90: not used for the verdict."""
    waves = k.get("memory_l1_wavefronts_shared")
    ideal = k.get("memory_l1_wavefronts_shared_ideal")
    source = "memory_l1_wavefronts_shared against memory_l1_wavefronts_shared_ideal"
    excessive = k.get("derived__memory_l1_wavefronts_shared_excessive")
    total = k.get("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")
    if (waves is None or not ideal) and excessive is not None and total:
        # ncu's own excess, which knows that a 16-byte access needs 4 wavefronts a warp
        waves, ideal = total, total - excessive
        source = "l1tex__data_pipe_lsu_wavefronts_mem_shared less ncu's excessive wavefronts"
    if waves is None or not ideal:
        waves = _sum(
            k,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        )
        ideal = _sum(
            k,
            "smsp__sass_inst_executed_op_shared_ld.sum",
            "smsp__sass_inst_executed_op_shared_st.sum",
        )
        source = "shared wavefronts (ld+st) against shared instructions"
    if not waves or not ideal or waves / ideal < 1.5:
        return None
    ratio = waves / ideal
    excess = max(0.0, waves - ideal)
    return Finding(
        kind="bank-conflicts",
        what="banks",
        value=f"{ratio:.1f}x ideal wavefronts",
        verdict="bank conflicts",
        advice="pad: [32][33]",
        tag="measured",
        score=min(4.8, 1.5 + 1.0 * math.log2(ratio)),
        kernel=k.name,
        detail=f"{source}: {waves:,.0f} wavefronts, {ideal:,.0f} ideal"
        f" ({excess / waves:.0%} excess).",
        data={"ratio": ratio, "wavefronts": waves, "ideal": ideal},
    )


def local_memory(k: KernelProfile) -> Finding | None:
    """Spills and other local-memory traffic, as a share of the bytes through L1."""
    local = _sum(
        k,
        "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
        "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    )
    if not local:
        return None
    glob_bytes = _sum(
        k,
        "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",
    )
    share = local / (local + (glob_bytes or 0.0))
    regs = k.get("launch__registers_per_thread")
    return Finding(
        kind="local-memory",
        what="local",
        value=f"{_bytes(local)} local ({share:.0%} of L1 bytes)",
        verdict="spills",
        advice="fewer live values",
        tag="measured",
        score=2.0 + 2.5 * min(1.0, share * 2.0),
        kernel=k.name,
        detail="l1tex__t_bytes_pipe_lsu_mem_local_op_{ld,st}.sum against the global"
        " bytes through L1" + (f"; {regs:.0f} registers a thread." if regs else "."),
        data={"local_bytes": local, "global_bytes": glob_bytes, "share": share},
    )


def divergence(k: KernelProfile) -> Finding | None:
    """Threads that ran each warp instruction (32 when no lane is idle)."""
    threads = k.get("smsp__thread_inst_executed_per_inst_executed.ratio")
    if threads is None or threads >= 28.0:
        return None
    busy = k.get("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    issue = issue_weight(busy)
    score = min(4.5, 8.0 * (32.0 - threads) / 32.0) * issue
    severe = score >= 1.75
    return Finding(
        kind="divergence",
        what="diverge",
        value=f"{threads:.1f} of 32 threads active",
        verdict="warps diverge" if severe else "warps diverge, issue slots to spare",
        advice="branch per warp" if severe else "",
        tag="measured",
        score=score,
        kernel=k.name,
        detail="smsp__thread_inst_executed_per_inst_executed.ratio: threads active"
        " per executed warp instruction (32 when no lane is idle)."
        + (
            f" The SM ran at {busy:.0f}% of its peak (sm__throughput): idle lanes waste issue"
            " slots, and here there were slots to spare, so the time goes elsewhere."
            if busy is not None and issue < 1.0
            else ""
        ),
        data={"threads": threads, "sm_busy": busy},
    )


def waves(k: KernelProfile) -> Finding | None:
    """A grid of less than one wave: SMs left idle."""
    w = k.get("launch__waves_per_multiprocessor")
    if w is None or w >= 1.0:
        return None
    grid = k.get("launch__grid_size")
    sms = k.get("device__attribute_multiprocessor_count")
    idle = f", {sms - grid:.0f} SMs idle" if sms and grid is not None and grid < sms else ""
    idle = idle or (f", {grid:.0f} blocks" if grid is not None else "")
    return Finding(
        kind="waves",
        what="waves",
        value=f"{w:.2f} waves{idle}",
        verdict="grid too small",
        advice="more blocks",
        tag="measured",
        score=4.6 if w < 0.5 else 3.2,
        kernel=k.name,
        detail="launch__waves_per_multiprocessor: blocks / (SMs x blocks per SM).",
        data={"waves": w, "grid": grid, "sms": sms},
    )


def occupancy(k: KernelProfile) -> Finding | None:
    """Achieved against theoretical occupancy, and what limits the theoretical. Not a goal in
    itself: warps are one factor of the bytes in flight (Little's law), the bytes each warp has
    outstanding the other. With warps enough, DRAM short of its roof and warps waiting on
    loads, the line says so, unmarked: it is advice, not the suspect for a kernel's figure."""
    achieved = k.get("sm__warps_active.avg.pct_of_peak_sustained_active")
    theory = k.get("sm__maximum_warps_per_active_cycle_pct")
    if achieved is None or theory is None:
        return None
    w = k.get("launch__waves_per_multiprocessor")
    at_roof = _at_roof(k)
    limiter, blocks = _limiter(k)
    low = theory < 60.0 and not at_roof and (w is None or w >= 1.0)
    score = 3.0 + (60.0 - theory) / 40.0 if low else 0.0
    short = not low and w is not None and w >= 1.0 and achieved < 0.6 * theory and not at_roof
    if short:
        score = 1.0
    why = f"{limiter}: {blocks:.0f} blocks/SM" if limiter and theory < 100 else ""
    top_stall = stalls(k)[:1]
    starved = (
        not low
        and _dram(k) is not None
        and not at_roof
        and (w is None or w >= 1.0)
        and achieved >= 0.6 * theory
        and bool(top_stall)
        and top_stall[0][0] == "long_scoreboard"
    )
    verdict, advice = "not a goal in itself", ""
    if low:
        verdict, advice = why or "too few warps", ADVICE.get(limiter, "")
    elif short:  # the maximum allows the warps, but they are not there: idle between blocks
        verdict, advice = "far under max", "tail or uneven blocks"
    elif starved:
        verdict, advice = "few bytes in flight", "more loads/thread"
    return Finding(
        kind="occupancy",
        what="occupancy",
        value=f"{achieved:.0f}% of {theory:.0f}% max",
        verdict=verdict,
        advice=advice,
        tag="measured",
        score=score,
        kernel=k.name,
        detail="sm__warps_active (achieved) and sm__maximum_warps_per_active_cycle_pct"
        " (theoretical); the limiter is the launch__occupancy_limit_* that binds."
        + (
            " DRAM is short of its roof while warps wait on loads: the SM has too few"
            " bytes in flight (bandwidth x latency, Little's law) and more warps cannot"
            " be added; more independent loads a thread (several elements, float4) can."
            if starved
            else ""
        ),
        data={"achieved": achieved, "theoretical": theory, "limiter": limiter},
    )


def stall_reasons(k: KernelProfile) -> Finding | None:
    """The two reasons warps waited most, as shares of all stalled cycles."""
    every = stalls(k)
    top = every[:2]
    if not top:
        return None
    total = sum(v for _, v in every) or 1.0
    meaning, advice = STALLS.get(top[0][0], (top[0][0].replace("_", " "), ""))
    return Finding(
        kind="stalls",
        what="stalls",
        value=", ".join(f"{r} {v / total:.0%}" for r, v in top),
        verdict=meaning,
        advice=advice,
        tag="measured",
        score=0.5,
        kernel=k.name,
        detail="smsp__average_warps_issue_stalled_<reason>_per_issue_active: cycles a"
        " warp spends in each state per issued instruction, as a share of all.",
        data={"top": top},
    )


def rule_messages(k: KernelProfile) -> list[Finding]:
    """Up to three of ncu's own rule messages (advice first)."""
    return [
        Finding(
            kind="ncu-rule",
            what="ncu",
            value=r.name,
            verdict=_first_sentence(r.message),
            tag="measured",
            kernel=k.name,
            detail=r.message,
            data={"type": r.kind, "speedup": r.speedup},
        )
        for r in pick_rules(k.rules)
    ]


MeasuredRule = Callable[[KernelProfile], "Finding | list[Finding] | None"]
# Tier 1's rules, in the order the card lists findings of equal weight; a rule that measures
# what a static rule guesses also names it in REPLACES below.
RULES: list[MeasuredRule] = [
    dram,
    coalescing,
    bank_conflicts,
    local_memory,
    divergence,
    waves,
    occupancy,
    stall_reasons,
    rule_messages,
]


def findings(k: KernelProfile) -> list[Finding]:
    """What the pass measured about one kernel, as findings tagged measured (see findings.py)."""
    return gather(RULES, k)


def in_flight(f: Finding, k: KernelProfile, flight: dict[str, float | str]) -> Finding:
    """The measured occupancy line judged by Little's law, as the static tier judges its own:
    the work a thread keeps in flight (read from its PTX: bytes of loads, or independent FMA
    chains) times the warps ncu saw resident, against what the SM needs. Enough in flight, and
    the missing warps cost nothing: a register-tiled matmul at 25% is its design."""
    warps = k.get("sm__warps_active.avg.per_cycle_active")
    per_thread, need = flight.get("per_thread"), flight.get("need_per_sm")
    if f.kind != "occupancy" or not warps or not isinstance(per_thread, (int, float)):
        return f
    if not isinstance(need, (int, float)) or need <= 0:
        return f
    unit = flight.get("unit")
    have = warps * per_thread * (32.0 if unit == "B" else 1.0)

    def amount(x: float) -> str:
        if unit == "B":
            return f"{x / 1024:.0f} KB" if x >= 1024 else f"{x:.0f} B"
        return f"{x:.0f} FMAs"

    said = (
        f" Little's law: each thread keeps {per_thread:.0f}"
        + (" B of loads" if unit == "B" else " independent FMA chains")
        + f" in flight, so the {warps:.1f} warps ncu saw resident hold {amount(have)} an SM;"
        f" the SM needs {amount(need)}."
    )
    data = {**f.data, "in_flight": {**flight, "have_per_sm": round(have, 1)}}
    if have < need:
        return replace(f, detail=f.detail + said, data=data)
    return replace(
        f,
        verdict=f"{amount(have)}/SM in flight, {amount(need)} needed",
        advice="",
        score=0.0,
        detail=f.detail + said + " More warps would not help: the occupancy is not the limit.",
        data=data,
    )


def _wasted(k: KernelProfile) -> bool:
    """Whether a busy DRAM moves bytes the kernel does not use: half-used sectors or spills."""
    for op in ("ld", "st"):
        pct = k.get(f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.pct")
        if (
            pct is not None
            and pct < 80.0
            and k.get(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")
        ):
            return True
    return bool(
        _sum(
            k,
            "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
            "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
        )
    )


# Tier 0 kinds a measurement of this kernel replaces: ncu measured the same thing.
REPLACES = {
    "coalescing": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",),
    "bank-conflicts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
    "occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "waves": ("launch__waves_per_multiprocessor",),
    "local-memory": ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",),
    "divergence": ("smsp__thread_inst_executed_per_inst_executed.ratio",),
}


def replaced_kinds(k: KernelProfile, measured: Sequence[Finding]) -> set[str]:
    """The static tier's finding kinds this profile measured (so the static guess goes)."""
    out = {kind for kind, keys in REPLACES.items() if all(key in k.metrics for key in keys)}
    if any(f.kind == "local-memory" for f in measured):
        out.add("spills")  # the measured traffic says how much the spills cost
    return out


def top(found: Sequence[Finding]) -> Finding | None:
    """The top suspect among a kernel's findings: the highest score of severity 1 or more."""
    ranked = sorted((f for f in found if f.severity > 0), key=lambda f: -f.score)
    return ranked[0] if ranked else None


def pick_rules(rules: Sequence[Rule], n: int = 3) -> list[Rule]:
    """ncu's rule messages worth showing: advice (OPT) first, largest estimated speedup first."""
    order = {"OPT": 0, "WRN": 1, "INF": 2}
    useful = [r for r in rules if r.kind in ("OPT", "WRN")]
    return sorted(useful, key=lambda r: (order.get(r.kind, 3), -(r.speedup or 0.0)))[:n]


def _first_sentence(text: str) -> str:
    m = re.match(r"(.+?[.!?])(\s|$)", text.strip())
    return (m.group(1) if m else text.strip())[:200]


ADVICE = {
    "blocks/SM cap": "bigger blocks",
    "block size": "a block size dividing 2048",
    "registers": "fewer registers",
    "shared mem": "less shared/block",
}


def _limiter(k: KernelProfile) -> tuple[str, float]:
    """What bounds the theoretical occupancy: the launch__occupancy_limit_* with the fewest
    blocks per SM, and that count; ("", 0) when ncu gave none."""
    # On a tie the first named binds: 32-thread blocks hit 32 blocks/SM before anything else.
    limits = {
        "blocks/SM cap": k.get("launch__occupancy_limit_blocks"),
        "block size": k.get("launch__occupancy_limit_warps"),
        "registers": k.get("launch__occupancy_limit_registers"),
        "shared mem": k.get("launch__occupancy_limit_shared_mem"),
    }
    have = {n: v for n, v in limits.items() if v is not None}
    if not have:
        return "", 0.0
    name = min(have, key=lambda n: have[n])
    return name, float(have[name])


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"
