"""No false alarms on good kernels: explain weighs each finding by how often its line runs and
judges occupancy by the work in flight (Little's law), so no expert solution gets a `!` or `!!`
while every planted flaw still does.

The frequencies (gpulab/explain/frequency.py) and the work in flight (inflight.py) are read from
PTX that NVRTC compiles here, with no GPU; Tier 1 from the ncu passes recorded on an H100 (the
planted flaws) and an H200 (every expert, `expert-*`, its source page too) in
tests/fixtures/explain/ncu/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.core import nvrtc
from gpulab.exercises import ladder
from gpulab.exercises.loader import load_catalog
from gpulab.explain import frequency, inflight, ncu, ncu_source, ptx
from gpulab.explain.explainer import add_profile, explain, explain_file

pytestmark = pytest.mark.skipif(nvrtc.library() is None, reason="needs NVRTC (nvidia-cuda-nvrtc)")

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "gpulab" / "exercises" / "catalog"
FIX = ROOT / "tests" / "fixtures" / "explain"
EXPERTS = sorted(
    p.parent.name
    for p in CATALOG.glob("*/expert.py")
    if "RawKernel" in p.read_text() or "RawModule" in p.read_text()
)
# planted-flaw kernels whose flaw the static tier can see: file -> the finding's kind
PLANTED_TIER0 = {
    "strided.py": "coalescing",
    "spills.py": "spills",
    "small_grid.py": "waves",
    "tiny_blocks.py": "occupancy",
    "big_shared.py": "occupancy",
}
# recorded ncu passes of planted flaws, and of kernels without one (the fixed transpose, map-2d
# along the rows); an expert's recording, once one is made on a GPU, joins the good ones
PLANTED_TIER1 = (
    "strided",
    "divergent",
    "spills",
    "small_grid",
    "tiny_blocks",
    "big_shared",
    "transpose-naive",
    "map-2d-columns",
)
GOOD_TIER1 = ("transpose-padded", "map-2d-rows")
RECORDED_EXPERTS = sorted(
    p.name.split(".")[0].removeprefix("expert-") for p in (FIX / "ncu").glob("expert-*.raw.csv")
)
# planted flaws recorded with the file that ran: the full card (static tier, Little's law, the
# pass) must still mark each
PLANTED_FILES = {
    "strided": FIX / "strided.py",
    "divergent": FIX / "divergent.py",
    "spills": FIX / "spills.py",
    "small_grid": FIX / "small_grid.py",
    "tiny_blocks": FIX / "tiny_blocks.py",
    "big_shared": FIX / "big_shared.py",
    "transpose-naive": CATALOG / "30-transpose-tiled" / "slow" / "no-padding.py",
    "map-2d-columns": CATALOG / "23-map-2d" / "slow" / "x-down-the-columns.py",
}


def _explain_expert(folder: str):
    ex = load_catalog().get(folder.split("-", 1)[1])
    return explain_file(CATALOG / folder / "expert.py", exercise=ex.id, metric=ex.metric)


@pytest.mark.parametrize("folder", EXPERTS)
def test_no_expert_gets_a_warning_in_tier0(folder):
    e = _explain_expert(folder)
    assert e.kernels and not any(k.error for k in e.kernels), e.notes
    warned = [f.card_line() for k in e.kernels for f in k.findings if f.severity >= 2]
    assert not warned, "\n".join(e.card())


def test_every_ladders_top_rung_is_an_expert_checked_above():
    # no top rung gets a `!` or `!!` in Tier 0: each is an expert, which the test above covers
    catalog = load_catalog()
    tops = {ladder.rungs(catalog.get(n))[-1].path for n in ladder.having(catalog)}
    assert len(tops) >= 4
    assert all(p.name == "expert.py" and p.parent.name in EXPERTS for p in tops), tops


@pytest.mark.parametrize("name", sorted(PLANTED_TIER0))
def test_every_planted_flaw_still_gets_a_warning_in_tier0(name):
    (k,) = explain_file(FIX / name).kernels
    assert k.top is not None and k.top.kind == PLANTED_TIER0[name] and k.top.severity >= 2, [
        f.card_line() for f in k.ranked()
    ]


def _recorded(label: str) -> list:
    raw = (FIX / "ncu" / f"{label}.raw.csv").read_text()
    kernels = ncu.merge(raw, (FIX / "ncu" / f"{label}.details.csv").read_text())
    return [f for k in kernels for f in ncu.findings(k)]


@pytest.mark.parametrize("label", PLANTED_TIER1)
def test_every_recorded_planted_flaw_gets_a_warning_in_tier1(label):
    assert max(f.severity for f in _recorded(label)) >= 2


def _profile(label: str, source: bool = True) -> ncu.Profile:
    page = FIX / "ncu" / f"{label}.source.csv"
    return ncu.Profile(
        kernels=ncu.merge(
            (FIX / "ncu" / f"{label}.raw.csv").read_text(),
            (FIX / "ncu" / f"{label}.details.csv").read_text(),
        ),
        source=page.read_text() if source and page.is_file() else "",
    )


def _expert_card(name: str, source: bool = True):
    folder = next(p for p in CATALOG.glob(f"*-{name}") if p.name.split("-", 1)[1] == name)
    return add_profile(_explain_expert(folder.name), _profile(f"expert-{name}", source))


def _marked(e) -> list[str]:
    return [
        f.card_line()
        for k in e.kernels
        for f in [*k.findings, *k.line_findings]
        if f.severity >= 2 and f.tag == "measured" and f.kind != "ncu-rule"
    ]


def test_every_kernel_expert_has_a_recorded_pass():
    assert sorted(f.split("-", 1)[1] for f in EXPERTS) == RECORDED_EXPERTS


@pytest.mark.parametrize("name", RECORDED_EXPERTS)
def test_recorded_experts_get_no_warning_in_tier1(name):
    """The card a pass on the H200 gave each expert (its kernel-level and per-line findings,
    weighed as the GPU test weighs them): nothing marked `!` or `!!`."""
    e = _expert_card(name)
    assert e.tier == 1 and all(k.line_findings is not None for k in e.kernels)
    assert not _marked(e), "\n".join(e.card())


@pytest.mark.parametrize("label", sorted(PLANTED_FILES))
def test_every_recorded_planted_flaw_is_still_marked_on_the_full_card(label):
    e = add_profile(explain_file(PLANTED_FILES[label]), _profile(label))
    assert _marked(e), "\n".join(e.card())


def test_a_table_read_from_l1_is_not_traffic():
    """broadcast-outer's row loads (4 a thread, 16 B apart) move 3.5x their ideal sectors in
    theory, but 99% hit in L1: weighed by the measured miss rate the line is not named; taken as
    if every load missed, the same counters would name it."""
    (k,) = _expert_card("broadcast-outer").kernels
    assert not [f for f in k.line_findings if f.kind == "line-sectors"]
    kp = _profile("expert-broadcast-outer").kernels[0]
    assert kp.get("l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct") > 95
    lines = ncu_source.lines_of(ncu_source.parse(_profile("expert-broadcast-outer").source), k.name)
    as_missed = ncu_source.findings(lines, k.name, lambda n: n, load_hit=0.0)
    assert [f for f in as_missed if f.kind == "line-sectors" and f.severity >= 2]
    coalesce = next(f for f in k.findings if f.kind == "coalescing")
    assert coalesce.severity == 0 and coalesce.data["share"] < 0.05


def test_a_word_a_block_is_a_sliver_of_the_traffic():
    """A reduction's one store a block uses 4 of 32 B a sector: under 1% of the sectors."""
    (k,) = _expert_card("reduction-kernel").kernels
    st = next(f for f in k.findings if f.kind == "coalescing" and f.data["op"] == "st")
    assert st.data["pct"] == 12.5 and st.data["share"] < 0.01 and st.severity == 0


def test_a_branch_that_splits_rarely_or_cheaply_is_not_marked():
    """A grid-stride loop's last trip splits 1 warp in 131,072 runs; scan's `lane == 31` store
    splits every warp it runs in, but the SM has issue slots to spare. Neither is marked; the
    planted `threadIdx.x & 1` branch (both sides every warp, half the lanes idle) is."""
    (k,) = _expert_card("grid-stride").kernels
    tail = [f for f in k.line_findings if f.kind == "line-divergence"]
    assert tail and all(f.severity == 0 and f.data["rate"] < 0.001 for f in tail)
    (k,) = _expert_card("scan").kernels
    split = [f for f in k.line_findings if f.kind == "line-divergence" and f.data["rate"] == 1.0]
    assert split and all(f.severity < 2 and "to spare" in f.detail + f.verdict for f in split)
    (planted,) = add_profile(explain_file(FIX / "divergent.py"), _profile("divergent")).kernels
    worst = max(
        (f for f in planted.line_findings if f.kind == "line-divergence"), key=lambda f: f.score
    )
    assert worst.severity >= 2 and worst.advice


def test_a_wide_shared_access_is_not_a_bank_conflict():
    """The register-tiled matmul reads shared memory 16 bytes a lane: 4 wavefronts a warp by
    design. ncu's own excess (1.04x) is used, not one wavefront an instruction (2.9x)."""
    (k,) = _expert_card("matmul-tiled").kernels
    assert not [f for f in k.findings if f.kind == "bank-conflicts"]
    kp = _profile("expert-matmul-tiled").kernels[0]
    per_instruction = (
        kp.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
        + kp.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
    ) / (
        kp.get("smsp__sass_inst_executed_op_shared_ld.sum")
        + kp.get("smsp__sass_inst_executed_op_shared_st.sum")
    )
    assert per_instruction > 2.5


def test_measured_occupancy_is_judged_by_the_work_in_flight():
    """ncu saw 24% occupancy on the matmul expert (registers), 49% on the histogram: with the
    work a thread keeps in flight, both hold what an SM needs; without it, both are marked."""
    for name in ("matmul-tiled", "histogram"):
        (k,) = _expert_card(name).kernels
        occ = next(f for f in k.findings if f.kind == "occupancy" and f.tag == "measured")
        have, need = occ.data["in_flight"]["have_per_sm"], occ.data["in_flight"]["need_per_sm"]
        assert occ.severity == 0 and have >= need and "Little's law" in occ.detail
        bare = next(
            f for f in ncu.findings(_profile(f"expert-{name}").kernels[0]) if f.kind == "occupancy"
        )
        assert bare.severity >= 2


@pytest.mark.parametrize("label", GOOD_TIER1)
def test_recorded_good_kernels_get_no_warning_in_tier1(label):
    found = _recorded(label)
    assert not [f for f in found if f.severity >= 2 and f.kind != "ncu-rule"], [
        f.card_line() for f in found
    ]


def _weights(code: str, name: str, block=(256,)):
    c = nvrtc.compile_source(code, "sm_90")
    assert c.ok, c.log
    fn = ptx.parse(c.ptx)[name]
    facts = ptx.facts(fn, ptx.kernel_params(code, name))
    return facts, frequency.weights(fn, facts, block)


def _by_line(facts, w, kind="load", space="global"):
    out: dict[int, float] = {}
    for a in facts.accesses:
        if a.kind == kind and a.space == space and a.line:
            out[a.line] = max(out.get(a.line, 0.0), w.of(a.index))
    return out


VEC_OR_SCALAR = r"""
extern "C" __global__ void twice(const float* x, float* y, int n) {
    long long i = 4LL * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i + 3 < n) {
        float4 v = *reinterpret_cast<const float4*>(x + i);
        *reinterpret_cast<float4*>(y + i) = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
    } else {
        for (int k = 0; k < 4; ++k) if (i + k < n) y[i + k] = 2 * x[i + k];
    }
}
"""

FEW_THREADS = r"""
extern "C" __global__ void halo(const float* x, float* s_out, int n) {
    __shared__ float s[264];
    int t = threadIdx.x;
    s[t + 4] = x[blockIdx.x * 256 + t];
    if (t < 4) s[t] = x[blockIdx.x * 256 + 256 + t];
    __syncthreads();
    s_out[blockIdx.x * 256 + t] = s[t] + s[t + 4];
}
"""

TAIL_LOOP = r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
    int n4 = n / 4;
    for (int i = t; i < n4; i += stride) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        reinterpret_cast<float4*>(y)[i] = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
    }
    for (int i = 4 * n4 + t; i < n; i += stride) y[i] = 2.0f * x[i];
}
"""


def test_the_narrow_side_of_a_vector_branch_is_rare():
    facts, w = _weights(VEC_OR_SCALAR, "twice")
    lines = _by_line(facts, w)
    assert lines[5] == pytest.approx(1.0) and lines[8] == pytest.approx(frequency.RARE)
    scalar = next(a for a in facts.accesses if a.line == 8 and a.kind == "load")
    assert "128-bit" in w.reason(scalar.index)


def test_a_branch_on_the_thread_index_counts_its_threads():
    facts, w = _weights(FEW_THREADS, "halo")
    lines = _by_line(facts, w)
    assert lines[5] == pytest.approx(1.0) and lines[6] == pytest.approx(4 / 256)
    # the block meets again after the branch: the line after it runs for every thread
    assert _by_line(facts, w, "store", "global")[8] == pytest.approx(1.0)


def test_a_remainder_loop_after_a_vector_loop_is_rare():
    facts, w = _weights(TAIL_LOOP, "scale")
    lines = _by_line(facts, w)
    assert lines[9] < 0.1 * lines[6], lines


def test_a_rare_strided_line_is_listed_but_not_marked():
    text = (CATALOG / "26-stencil-shared" / "expert.py").read_text()
    (k,) = explain(text, exercise="stencil-shared", metric="GB/s").kernels
    rare = [f for f in k.findings if f.kind in ("coalescing", "bank-conflicts")]
    assert rare and all(f.severity == 0 and "rare path" in f.verdict for f in rare)
    assert all(f.data["weight"] < 0.25 and "runs about" in f.detail for f in rare)


def test_occupancy_is_judged_by_the_work_in_flight():
    """The register-tiled matmul at 25% keeps 1024 warp FMAs in flight an SM where 16 do; a
    32-thread block with one float load a thread has 4 KB of the 15 KB an SM needs."""
    (mm,) = _explain_expert("31-matmul-tiled").kernels
    occ = next(f for f in mm.findings if f.kind == "occupancy")
    assert occ.data["fraction"] == 0.25 and occ.severity == 0
    flight = occ.data["in_flight"]
    assert flight["unit"] == "FMA" and flight["per_thread"] == 64
    assert flight["have_per_sm"] >= 16 * flight["need_per_sm"]
    (tiny,) = explain_file(FIX / "tiny_blocks.py").kernels
    occ = next(f for f in tiny.findings if f.kind == "occupancy")
    assert occ.data["in_flight"]["per_thread"] == 4 and occ.severity == 2
    assert "Little's law" in occ.detail and "from 27% to 54%" in occ.detail


def test_bytes_in_flight_count_loads_issued_before_their_first_use():
    code = r"""
    extern "C" __global__ void sum4(const float* x, float* y) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float a = x[i], b = x[i + 1 * 1024], c = x[i + 2 * 1024], d = x[i + 3 * 1024];
        y[i] = a + b + c + d;
    }
    """
    c = nvrtc.compile_source(code, "sm_90")
    fn = ptx.parse(c.ptx)["sum4"]
    facts = ptx.facts(fn)
    assert inflight.load_bytes(facts, frequency.weights(fn, facts)) == 16
