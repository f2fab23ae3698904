"""No false alarms on good kernels: explain weighs each finding by how often its line runs and
judges occupancy by the work in flight (Little's law), so no expert solution gets a `!` or `!!`
while every planted flaw still does.

The frequencies (gpulab/explain/frequency.py) and the work in flight (inflight.py) are read from
PTX that NVRTC compiles here, with no GPU; Tier 1 from the ncu passes recorded on an H100
(tests/fixtures/explain/ncu/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.core import nvrtc
from gpulab.exercises import ladder
from gpulab.exercises.loader import load_catalog
from gpulab.explain import frequency, inflight, ncu, ptx
from gpulab.explain.explainer import explain, explain_file

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
GOOD_TIER1 = ("transpose-padded", "map-2d-rows") + tuple(
    sorted(p.name.split(".")[0] for p in (FIX / "ncu").glob("expert-*.raw.csv"))
)


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
