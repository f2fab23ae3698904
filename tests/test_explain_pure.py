"""gpulab.explain's pure parts: the occupancy calculator, waves, reading a learner's file,
the roofline point and the card. No compiler, no GPU."""

from __future__ import annotations

import math

import pytest

from gpulab.exercises.intensity import Intensity
from gpulab.exercises.loader import load_catalog
from gpulab.explain import arch as arches
from gpulab.explain import occupancy as occ
from gpulab.explain import ptx, roofline, source
from gpulab.explain.findings import Explanation, Finding, KernelReport

H100 = arches.get("sm_90")

# (arch, block, regs, static shared, dynamic shared) -> (blocks per SM, limiter). Worked by hand
# from cuda_occupancy.h; the GPU test checks the same kind of cases against the driver.
CASES = [
    ("sm_90", 256, 32, 0, 0, 8, "registers"),  # 100%: registers and warps both allow 8
    ("sm_90", 256, 10, 0, 0, 8, "warps"),
    ("sm_90", 32, 10, 0, 0, 32, "blocks per SM"),  # 32 blocks x 1 warp = 50%
    ("sm_90", 64, 10, 0, 0, 32, "blocks per SM"),  # 32 x 2 warps = 100%
    ("sm_90", 256, 56, 8704, 0, 4, "registers"),  # the tiled matmul: 56 x 32 -> 1792 a warp
    ("sm_90", 256, 32, 49152, 0, 4, "shared memory"),  # (48 K + 1 K reserved) x 4 <= 228 K
    ("sm_90", 256, 16, 0, 100 * 1024, 2, "shared memory"),  # dynamic counts the same
    ("sm_90", 128, 128, 0, 0, 4, "registers"),
    ("sm_90", 32, 80, 0, 0, 24, "registers"),  # per sub-partition: 16384 // 2560 = 6 warps x 4
    ("sm_90", 1024, 64, 0, 0, 1, "registers"),
    ("sm_90", 768, 16, 0, 0, 2, "warps"),  # 64 // 24 = 2 blocks: 48 warps, 75%
    ("sm_80", 256, 32, 49152, 0, 3, "shared memory"),  # 164 K // 49 K
    ("sm_86", 256, 16, 0, 0, 6, "warps"),  # 1536 threads a SM
    ("sm_86", 32, 16, 0, 0, 16, "blocks per SM"),
    ("sm_89", 32, 16, 0, 0, 24, "blocks per SM"),
]


@pytest.mark.parametrize("name,block,regs,smem,dyn,blocks,limiter", CASES)
def test_occupancy_calculator(name, block, regs, smem, dyn, blocks, limiter):
    o = occ.compute(arches.get(name), block, regs, smem, dyn)
    assert (o.blocks_per_sm, o.limiter) == (blocks, limiter), o.limits
    assert o.warps_per_sm == blocks * math.ceil(block / 32)


def test_occupancy_that_cannot_launch():
    too_many_regs = occ.compute(H100, 1024, 255, max_threads=256)
    assert too_many_regs.blocks_per_sm == 0 and "more than" in too_many_regs.why_none
    too_much_shared = occ.compute(H100, 128, 16, 200 * 1024, 40 * 1024)
    assert too_much_shared.blocks_per_sm == 0 and "shared memory" in too_much_shared.why_none


@pytest.mark.parametrize("regs,threads", [(255, 256), (128, 512), (64, 1024), (72, 896)])
def test_max_threads_for_registers(regs, threads):
    assert occ.max_threads_for_regs(H100, regs) == threads


def test_waves_and_tail():
    w = occ.Waves(blocks=1320, per_wave=132 * 8, sms=132)
    assert w.full_waves == 1 and w.tail == 264 and math.isclose(w.waves, 1.25)
    assert math.isclose(w.efficiency, 1320 / 2112)
    assert occ.Waves(16, 1056, 132).busy_sms == 16


def test_arch_names_and_cards():
    assert arches.get("90") is arches.get("sm_90") is arches.get("compute_90")
    with pytest.raises(ValueError, match="sm_80"):
        arches.get("sm_70")
    assert arches.sms_for_card("NVIDIA H100 80GB HBM3") == 132
    assert arches.sms_for_card("NVIDIA H100 PCIe") == 114
    assert arches.sms_for_card("NVIDIA A100-SXM4-40GB") == 108
    assert arches.sms_for_card("Mystery GPU") is None


LEARNER = '''
import cupy as cp
import numpy as np

TILE = 32
SOURCE = r"""
extern "C" __global__ void k(const float* a, float* out, int n) { out[0] = a[0]; }
"""
OTHER = f"""
#define TILE {TILE}
extern "C" __global__ void k2(float* a) {{ a[threadIdx.x] = TILE; }}
"""
_k = cp.RawKernel(SOURCE, "k", options=("-use_fast_math",))
_mod = cp.RawModule(code=OTHER)
_k2 = _mod.get_function("k2")


def run(a, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(4 * sms, (n + 255) // 256))
    _k((blocks,), (256,), (a, out, np.int32(n)))
    rows, cols = a.shape
    block = (TILE, 8)
    _k2(((cols + block[0] - 1) // block[0], 7), block, (a,), shared_mem=4 * TILE)


def built(x):
    code = "extern \\"C\\" __global__ void g() {}" + x
    return cp.RawKernel(code, "g")


def fstring(width):
    return cp.RawKernel(f"extern \\"C\\" __global__ void h() {{ int w = {width}; }}", "h")
'''


def test_scan_finds_kernels_and_launches_without_running_anything():
    s = source.scan(LEARNER, sms=132)
    names = [(k.name, k.factory, k.variable) for k in s.kernels]
    assert names == [("k", "RawKernel", "_k"), ("k2", "RawModule", "_k2")]
    k = s.kernels[0]
    assert k.options == ("-use_fast_math",)
    assert k.code_line == 6 and k.file_line(2) == 7  # the string's 2nd line is file line 7
    assert "#define TILE 32" in s.kernels[1].code and s.kernels[1].code_line is None
    first, second = s.launches
    assert first.grid == (4 * 132,) and first.block == (256,) and first.shared_mem == 0
    assert isinstance(second.grid[0], source.Big) and second.grid[1] == 7
    assert second.block == (32, 8) and second.shared_mem == 128 and second.threads == 256
    assert len(s.notes) == 2 and all("not explained" in n for n in s.notes)
    assert any("f-string" in n for n in s.notes)


def test_scan_reads_a_kernel_per_value_of_a_comprehension_over_constants():
    text = (
        'import cupy as cp\nSRC = r"""extern "C" __global__ void k1(float* x) {}"""\n'
        '_ks = {k: cp.RawKernel(SRC, f"conv_k{k}") for k in (1, 3)}\n'
        "def f(x, k):\n    _ks[k]((8,), (32, 8), (x,))\n"
    )
    s = source.scan(text)
    assert [(k.name, k.variable) for k in s.kernels] == [("conv_k1", "_ks"), ("conv_k3", "_ks")]
    assert [(la.kernel, la.block) for la in s.launches] == [
        ("conv_k1", (32, 8)),
        ("conv_k3", (32, 8)),
    ]
    assert not s.notes


def test_scan_notes_elementwise_kernels_and_syntax_errors():
    s = source.scan(
        "import cupy as cp\nk = cp.ElementwiseKernel('float32 x', 'float32 y', 'y = x')"
    )
    assert not s.kernels and "ElementwiseKernel" in s.notes[0]
    bad = source.scan("def f(:\n", filename="mine.py")
    assert bad.notes == ["mine.py does not parse (line 1): invalid syntax"]


def test_extern_c_kernel_names():
    code = 'extern "C" __global__ void __launch_bounds__(256) a(int* x) {}\n'
    code += 'extern "C" __global__ void b(int* x) {}'
    assert source.extern_c_kernels(code) == ["a", "b"]
    assert ptx.kernel_params('extern "C" __global__ void b(const int* x, float y[]) {', "b") == [
        "x",
        "y",
    ]


def test_polynomials():
    a = ptx.padd(ptx.sym("cols"), ptx.const(2))
    assert ptx.pformat(ptx.pmul(a, ptx.const(4))) == "8 + 4*cols"
    assert ptx.pconst(ptx.padd(a, a, -1)) == 0
    assert ptx.pformat(ptx.psubst(ptx.pmul(ptx.sym("blockDim.x"), a), {"blockDim.x": 32})) == (
        "64 + 32*cols"
    )


PTX = """
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	.loc	1 3 0
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_1];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ctaid.x;
	mad.lo.s32 	%r4, %r2, %r1, %r3;
	mul.wide.s32 	%rd2, %r4, 4;
	add.s64 	%rd3, %rd1, %rd2;
	.loc	1 4 0
$L__BB0_1:
	ld.global.f32 	%f1, [%rd3+16];
	add.s32 	%r2, %r2, 256;
	setp.lt.s32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_1;
	shr.u32 	%r5, %r2, 1;
	mul.wide.u32 	%rd4, %r5, 4;
	add.s64 	%rd5, %rd1, %rd4;
	st.global.v4.f32 	[%rd5], {%f1, %f1, %f1, %f1};
	bar.sync 	0;
	ret;
}
	.file	1 "kernel.cu"
"""


def test_ptx_dataflow_follows_thread_strides():
    fn = ptx.parse(PTX)["k"]
    facts = ptx.facts(fn, ["out", "cols"])
    load, store = facts.accesses
    assert (load.kind, load.space, load.width, load.line) == ("load", "global", 4, 4)
    assert ptx.pformat(load.addr.cx) == "4*cols"  # tid.x * cols * 4 bytes
    assert load.loop is not None and len(facts.loops) == 1
    assert store.width == 16 and not store.addr.known  # after a shift right: unknown
    assert len(facts.barriers) == 1


def test_roofline_point_and_plot():
    cat = load_catalog()
    roof = roofline.Roof(3000.0, 50.0)
    p = roofline.point("map-add-ten", "GB/s", 2600.0, roof, cat.get("map-add-ten").intensity)
    assert p.intensity == 1 / 8 and p.bound == "memory"
    assert math.isclose(p.ridge, 50e12 / 3000e9) and math.isclose(p.of_roof, 2600 / 3000)
    m = roofline.point("matmul-tiled", "TFLOP/s", 20.0, roof, cat.get("matmul-tiled").intensity)
    assert m.bound == "compute" and math.isclose(m.of_roof, 0.4)
    lines = roofline.plot(p)
    assert sum(line.count("*") for line in lines[:-2]) == 1 and len(lines) == 16
    assert roofline.point("no-intensity", "GB/s", 1, roof, None) is None
    assert roofline.point("ungraded", "none", 1, roof, Intensity(1, 8, "x")) is None


def test_a_transfer_sits_under_the_bandwidth_it_is_graded_against():
    from gpulab.core.peaks import Peaks
    from gpulab.explain.inputs import roof_for

    cat = load_catalog()
    peaks = Peaks(
        key="k", device="d", cpu=False, copy_gbs=3000.0, h2d_pinned_gbs=50.0,
        matmul_tflops={"fp32": 50.0, "fp16": 700.0},
    )  # fmt: skip
    ceiling, roof = roof_for(cat.get("streams-overlap"), peaks)
    assert ceiling == 50.0 and roof == roofline.Roof(50.0, 50.0, "h2d", "matmul:fp32")
    ceiling, roof = roof_for(cat.get("triton-matmul"), peaks)
    assert ceiling == 700.0 and roof == roofline.Roof(3000.0, 700.0, "copy", "matmul:fp16")
    assert roof_for(cat.get("device-agnostic"), peaks) == (None, None)


def test_card_lines_fit_and_the_top_suspect_comes_first():
    long = "x" * 200
    rep = KernelReport("k", 3)
    rep.findings = [
        Finding(
            kind="vector-loads", what="loads", value="1 load", verdict="no 128-bit",
            advice="try float4", tag="static", score=1.2,
        ),
        Finding(kind="spills", what="spills", value=long, verdict=long, advice=long, tag="static",
                score=3.6),
        Finding(kind="resources", what="resources", value="10 regs", verdict="fine", tag="static"),
    ]  # fmt: skip
    e = Explanation("ex", "f.py", "sm_90", "assumed H100 SXM (132 SMs)", kernels=[rep])
    e.notes = ["a note " * 30]
    card = e.card()
    assert all(len(line) <= 80 for line in card)
    assert card[2].startswith("!! spills") and card[2].endswith("[s]")
    assert rep.top.kind == "spills"
    d = e.to_dict()
    assert d["kernels"][0]["top_suspect"] == "spills"
    assert [f["kind"] for f in d["kernels"][0]["findings"]] == [
        "spills",
        "vector-loads",
        "resources",
    ]
    with pytest.raises(ValueError):
        Finding(kind="x", what="x", value="", verdict="", tag="guessed")
