"""Tier 1 (Nsight Compute) and Tier 2 (compute-sanitizer) without a GPU.

Everything after a tool's run is a pure function of its output, so these tests feed output
recorded on an H100 (tests/fixtures/explain/ncu/, sanitizer/; recorded by
tests/test_explain_tier1_gpu.py with GPULAB_EXPLAIN_RECORD): each planted flaw's measured top
suspect, the card's width, a measurement replacing the static guess, ncu's rule messages, the
first sanitizer error with its kernel, thread, block, address and line. The runs themselves
(command line, progress, the report kept, no permission, cancel) go through a fake ncu and
compute-sanitizer that replay the recordings (gpulab/testing/fake_nvtools.py).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from gpulab.cli import main
from gpulab.core import nvrtc
from gpulab.core.errors import Cancelled
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.workspace import Workspace
from gpulab.explain import ncu, ncu_source, sanitize, tools
from gpulab.explain.explainer import add_profile, explain_file
from gpulab.testing import fake_nvtools

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "explain"
CATALOG = ROOT / "gpulab" / "exercises" / "catalog"
NO_PADDING = CATALOG / "30-transpose-tiled" / "slow" / "no-padding.py"
needs_nvrtc = pytest.mark.skipif(nvrtc.library() is None, reason="needs NVRTC")

# recording -> (kernel, the measured top suspect, words its line must hold)
EXPECT = {
    "strided": ("strided_copy", "coalescing", "loads 4/32 B a sector"),
    "divergent": ("branchy", "divergence", "16.6 of 32 threads"),
    "spills": ("heavy", "local-memory", "spills"),
    "small_grid": ("saxpy", "waves", "116 SMs idle"),
    "tiny_blocks": ("scale", "occupancy", "blocks/SM cap: 32 blocks/SM"),
    "big_shared": ("reverse_blocks", "occupancy", "shared mem: 4 blocks/SM"),
    "transpose-naive": ("transpose", "bank-conflicts", "ideal wavefronts"),
    "transpose-padded": ("transpose", None, ""),
    "map-2d-columns": ("add_row_index", "coalescing", "4/32 B a sector"),
    "map-2d-rows": ("add_row_index", None, ""),
}


def recorded(label: str) -> list[ncu.KernelProfile]:
    raw = (FIX / "ncu" / f"{label}.raw.csv").read_text()
    details = (FIX / "ncu" / f"{label}.details.csv").read_text()
    return ncu.merge(raw, details)


@pytest.mark.parametrize("label", sorted(EXPECT))
def test_recorded_pass_names_the_planted_flaw(label):
    name, kind, words = EXPECT[label]
    (k,) = recorded(label)
    assert k.name == name
    found = ncu.findings(k)
    top = ncu.top(found)
    lines = "\n".join(f.card_line() for f in found)
    assert (top.kind if top else None) == kind, lines
    if top is not None:
        assert words in top.text(), lines
        assert top.tag == "measured" and top.severity >= 2
    assert all(len(f.card_line()) <= 80 for f in found)
    assert all(f.tag == "measured" for f in found)
    rules = [f for f in found if f.kind == "ncu-rule"]
    assert 1 <= len(rules) <= 3


def test_every_reading_is_in_range():
    """Percentages in 0..100, threads in 1..32, the pass's CSV has what the findings read."""
    for label in EXPECT:
        (k,) = recorded(label)
        for key in (
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "sm__maximum_warps_per_active_cycle_pct",
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
        ):
            v = k.get(key)
            assert v is not None and 0.0 <= v <= 100.0, (label, key, v)
        threads = k.get("smsp__thread_inst_executed_per_inst_executed.ratio")
        assert threads is not None and 1.0 <= threads <= 32.0
        assert len(ncu.stalls(k)) >= 5


def test_the_flaw_and_its_fix_differ_where_they_should():
    """The unpadded tile has bank conflicts and the padded one none; reading down columns wastes
    7/8 of each sector and reading along rows little (its rows of an odd width start mid-sector,
    so some sectors are shared by two rows: 82% measured)."""
    (naive,), (padded,) = recorded("transpose-naive"), recorded("transpose-padded")
    assert any(f.kind == "bank-conflicts" for f in ncu.findings(naive))
    assert not any(f.kind == "bank-conflicts" for f in ncu.findings(padded))
    (cols,), (rows,) = recorded("map-2d-columns"), recorded("map-2d-rows")
    key = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
    assert cols.get(key) == pytest.approx(12.5, abs=0.5) and rows.get(key) > 75


def test_high_occupancy_short_of_the_roof_reads_as_bytes_in_flight():
    """Little's law: with warps enough, DRAM under its roof and loads waited on, the occupancy
    line names the bytes in flight (unmarked advice: the fixed transpose keeps no suspect);
    a grid too small to fill the GPU, or a kernel at the roof, is not told so."""
    (padded,) = recorded("transpose-padded")
    occ = next(f for f in ncu.findings(padded) if f.kind == "occupancy")
    assert occ.verdict == "few bytes in flight" and occ.severity == 0
    assert "Little's law" in occ.detail and len(occ.card_line()) <= 80
    for label in ("small_grid", "strided", "divergent"):
        (k,) = recorded(label)
        line = next(f for f in ncu.findings(k) if f.kind == "occupancy")
        assert line.verdict == "not a goal in itself", (label, line.card_line())


def test_warps_the_maximum_allows_but_that_are_not_there_get_a_question_mark():
    """Achieved occupancy far under a maximum that is high enough, with a full wave at least:
    the SMs sit idle between blocks (a tail, blocks of uneven work), marked `?` and said so."""
    (k,) = recorded("transpose-padded")
    theory = k.get("sm__maximum_warps_per_active_cycle_pct")
    assert theory is not None and theory >= 60.0
    k.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] = 0.3 * theory
    k.metrics["launch__waves_per_multiprocessor"] = 2.0
    occ = next(f for f in ncu.findings(k) if f.kind == "occupancy")
    assert occ.verdict == "far under max" and occ.severity == 1, occ.card_line()
    assert "tail or uneven blocks" in occ.card_line()
    k.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] = 0.9 * theory
    occ = next(f for f in ncu.findings(k) if f.kind == "occupancy")
    assert occ.verdict != "far under max"


def test_ncu_rules_are_advice_first_and_at_most_three():
    (k,) = recorded("strided")
    picked = ncu.pick_rules(k.rules)
    assert len(picked) == 3 and len(k.rules) >= 3
    assert "UncoalescedGlobalAccess" in [r.name for r in k.rules]
    kinds = [r.kind for r in picked]
    assert kinds == sorted(kinds, key=lambda t: {"OPT": 0, "WRN": 1}.get(t, 2))


@needs_nvrtc
def test_a_measurement_replaces_the_static_guess():
    e = explain_file(NO_PADDING, exercise="transpose-tiled", metric="GB/s")
    (k,) = e.kernels
    assert any(f.kind == "bank-conflicts" and f.tag == "estimated" for f in k.findings)
    prof = ncu.Profile(recorded("transpose-naive"), report="/tmp/x.ncu-rep", seconds=7.5)
    add_profile(e, prof)
    banks = [f for f in k.findings if f.kind == "bank-conflicts"]
    assert [f.tag for f in banks] == ["measured"]
    assert k.top is not None and k.top.kind == "bank-conflicts"
    card = e.card()
    assert e.tier == 1 and "ncu report: /tmp/x.ncu-rep" in card
    assert all(len(line) <= 80 for line in card)
    assert all(len(line) <= 80 for line in e.compact(80))


def test_the_command_profiles_only_the_learners_kernels_after_the_first_call():
    argv = ncu.command("ncu", ["scan_blocks", "add_offsets"], ["python", "t.py"], Path("r.ncu-rep"))
    assert argv[argv.index("--kernel-name") + 1] == "regex:^(scan_blocks|add_offsets)$"
    # the target opens a profiler range around its last call: nothing of the first is measured
    assert argv[argv.index("--profile-from-start") + 1] == "off" and "--launch-skip" not in argv
    assert argv[argv.index("--launch-count") + 1] == "2"
    assert argv[argv.index("--export") + 1] == "r.ncu-rep"
    assert argv[-2:] == ["python", "t.py"]
    assert {"SpeedOfLight", "Occupancy", "WarpStateStats"} <= set(argv)


def test_a_pass_through_the_fake_ncu_keeps_the_report_and_says_how_far(monkeypatch, tmp_path):
    log = fake_nvtools.install(monkeypatch, tmp_path, f"replay:{FIX / 'ncu' / 'strided'}")
    said: list[str] = []
    target = tools.target_argv(FIX / "strided.py", driver=FIX / "planted_driver.py")
    prof = ncu.profile(["strided_copy"], target, on_progress=said.append)
    assert Path(prof.report).is_file() and prof.report.endswith(".ncu-rep")
    assert prof.report.startswith(str(ncu.reports_dir()))
    assert any("100%" in s for s in said), said
    (k,) = prof.kernels
    assert ncu.top(ncu.findings(k)).kind == "coalescing"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[0][0] == "ncu" and "--kernel-name" in calls[0]
    assert calls[0][-len(target) :] == target  # the learner's process, under ncu
    assert [c[c.index("--page") + 1] for c in calls[1:]] == ["raw", "details", "source"]
    assert calls[-1][-2:] == ["--print-source", "cuda,sass"]  # the counters of each line


def test_without_permission_one_line_says_what_an_admin_changes(monkeypatch, tmp_path, capsys):
    fake_nvtools.install(monkeypatch, tmp_path, "perm")
    with pytest.raises(ncu.NoPermission, match="NVreg_RestrictProfilingToAdminUsers=0"):
        ncu.profile(["k"], ["python", "-c", "pass"])
    if nvrtc.library() is None:
        return
    assert main(["ex", "explain", "transpose-tiled", "--file", str(NO_PADDING), "--ncu"]) == 0
    out = capsys.readouterr().out.splitlines()
    admin = [ln for ln in out if "NVreg_RestrictProfilingToAdminUsers=0" in ln]
    assert len(admin) == 1 and len(admin[0]) <= 80
    assert any("banks" in ln and "[e]" in ln for ln in out)  # Tier 0 stays


def test_ncu_missing_or_profiling_nothing_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_NCU", str(tmp_path / "no-such-ncu"))
    with pytest.raises(ncu.NcuError, match="ncu not found"):
        ncu.profile(["k"], ["python"])
    fake_nvtools.install(monkeypatch, tmp_path, "nokernel")
    with pytest.raises(ncu.NcuError, match="saw no launch of k"):
        ncu.profile(["k"], ["python"])


def test_cancel_ends_the_tool_and_its_process_group(monkeypatch, tmp_path):
    fake_nvtools.install(monkeypatch, tmp_path, "hang")
    flag = threading.Event()
    threading.Timer(0.5, flag.set).start()
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        ncu.profile(["k"], ["python"], cancel=flag.is_set)
    assert time.perf_counter() - t0 < 5.0
    # The fake (a shell wrapper, then Python) was started with the log's path in its
    # environment: no process that has it may be left (this one got it after it started).
    alive = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{p}/environ").read_bytes()
        except OSError:
            continue
        if str(tmp_path / "nvtools.log").encode() in env:
            alive.append(int(p))
    assert not alive, alive


# -- Tier 2 ----------------------------------------------------------------------------------


def test_memcheck_names_kernel_thread_block_address_and_line():
    text = (FIX / "sanitizer" / "oob-write.memcheck.txt").read_text()
    count, first = sanitize.parse(text, "memcheck")
    assert count == 52 and first is not None
    assert first.what == "Invalid __global__ read of size 4 bytes" and first.kernel == "abs_diff"
    assert first.thread == (85, 0, 0) and first.block == (85, 0, 0)
    assert first.address == "0x7faeb7815554" and "of size 87,380 bytes" in first.where
    sanitize.map_line(first, {"abs_diff": 7})
    assert first.source_line == 4 and first.file_line == 10
    assert "line 10 of your file" in first.text()


def test_racecheck_names_both_accesses():
    text = (FIX / "sanitizer" / "race.racecheck.txt").read_text()
    count, first = sanitize.parse(text, "racecheck")
    assert count == 20 and first is not None
    assert first.kernel == "transpose" and first.block == (0, 4, 0) and first.thread == (6, 0, 0)
    assert first.what == "potential RAW hazard on __shared__" and first.address == "0x418"
    sanitize.map_line(first, {"transpose": 7})
    assert (first.file_line, first.other_file_line) == (17, 23)


@pytest.mark.parametrize("name", ["clean.memcheck", "clean.racecheck", "race.memcheck"])
def test_a_clean_run_has_no_error(name):
    count, first = sanitize.parse((FIX / "sanitizer" / f"{name}.txt").read_text(), "memcheck")
    assert (count, first) == (0, None)


def test_check_sanitize_reports_the_first_error(monkeypatch, tmp_path, capsys):
    ex = load_catalog().get("zip-add")
    wrong = CATALOG / "21-zip-add" / "wrong" / "no-bounds-check.py"
    path = Workspace().path(ex)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wrong.read_text())
    fake_nvtools.install(monkeypatch, tmp_path, f"replay:{FIX / 'sanitizer' / 'oob-write'}")
    assert main(["ex", "check", "zip-add", "--sanitize"]) == 1
    out = capsys.readouterr().out
    assert "memcheck: Invalid __global__ read" in out and "line 11 of your file" in out
    assert "racecheck: no errors" in out
    fake_nvtools.install(monkeypatch, tmp_path, f"replay:{FIX / 'sanitizer' / 'clean'}")
    assert main(["ex", "check", "zip-add", "--sanitize", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["sanitize"]
    assert data["clean"] and [r["tool"] for r in data["runs"]] == ["memcheck", "racecheck"]


@needs_nvrtc
def test_explain_ncu_puts_the_measurement_on_the_card(monkeypatch, tmp_path, capsys):
    fake_nvtools.install(monkeypatch, tmp_path, f"replay:{FIX / 'ncu' / 'transpose-naive'}")
    args = ["ex", "explain", "transpose-tiled", "--file", str(NO_PADDING), "--ncu"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["explain"]
    (k,) = data["kernels"]
    assert data["tier"] == 1 and Path(data["report"]).is_file()
    assert k["top_suspect"] == "bank-conflicts" and k["findings"][0]["tag"] == "measured"
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(ln.startswith("ncu report: ") for ln in out)
    card, source = out[: out.index("")], out[out.index("") + 1 :]
    assert all(len(ln) <= 80 for ln in card) and all(len(ln) <= 100 for ln in source)
    assert source[0].startswith("source (file lines)")
    assert not any("measure it:" in ln for ln in out)  # the hint is for the static card only


# -- by source line: ncu's source counters ---------------------------------------------------
# The source pages under tests/fixtures/explain/ncu/*.source.csv are built by hand in the layout
# ncu prints (`--page source --csv --print-source cuda,sass`: ncu_source.py); a GPU pass with
# GPULAB_EXPLAIN_RECORD replaces them with recorded ones.


def test_source_page_parses_the_cuda_lines_not_the_sass_rows():
    text = (FIX / "ncu" / "strided.source.csv").read_text()
    parsed = ncu_source.parse(text)
    lines = ncu_source.lines_of(parsed, "strided_copy")
    assert [x.line for x in lines] == [1, 2, 3, 4, 5, 6, 7]  # the two SASS rows are not lines
    six = lines[5]
    assert "STRIDE" in six.code and six.get("L2 Theoretical Sectors Global Excessive") == 917504
    assert ncu_source.lines_of(parsed, "other") == []
    assert ncu_source.parse("") == {}


@needs_nvrtc
@pytest.mark.parametrize(
    ("label", "needle", "kind"),
    [
        ("strided", "a[(long long)i * STRIDE]", "line-sectors"),
        ("divergent", "threadIdx.x & 1", "line-divergence"),
    ],
)
def test_a_pass_names_the_planted_line(label, needle, kind):
    path = FIX / f"{label}.py"
    prof = ncu.Profile(
        kernels=recorded(label), source=(FIX / "ncu" / f"{label}.source.csv").read_text()
    )
    e = add_profile(explain_file(path), prof)
    worst = e.worst_line()
    assert worst is not None and worst.kind == kind and worst.tag == "measured"
    assert needle in path.read_text().splitlines()[worst.line - 1], worst.sentence()
    assert worst.severity >= 2 and worst.sentence().startswith(f"line {worst.line}: ")
    annotated = e.annotated()
    assert all(len(ln) <= 100 for ln in annotated)
    assert any(ln.startswith(f"{worst.line:>4} ") and "[m]" in ln for ln in annotated)


@needs_nvrtc
def test_a_pass_without_a_source_page_keeps_the_static_lines():
    e = add_profile(explain_file(FIX / "strided.py"), ncu.Profile(kernels=recorded("strided")))
    (k,) = e.kernels
    assert not k.line_findings
    assert not any(f.kind == "coalescing" and f.tag != "measured" for f in k.findings)
