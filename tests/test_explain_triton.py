"""explain's static tier on Triton kernels, with no GPU: the learner's function is called once on
the check's timed inputs with its launches recorded, each kernel compiled for sm_90 from those
arguments, and its PTX (whose `.loc` lines are the learner's file lines) and cubin read by the
same rules as CUDA C. Each explain of a Triton file starts one child process (about 3 s); the
explanations are made once a module."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.exercises.loader import load_catalog
from gpulab.explain import ptx
from gpulab.explain.explainer import explain, explain_file
from gpulab.explain.triton_kernels import jit_functions

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "gpulab" / "exercises" / "catalog"
FIX = ROOT / "tests" / "fixtures" / "explain" / "triton"
TRITON = sorted(p.name for p in CATALOG.glob("*-triton-*"))


def _needs_triton() -> None:
    pytest.importorskip("triton")
    pytest.importorskip("torch")


def _explain(path: Path, folder: str):
    _needs_triton()
    ex = load_catalog().get(folder.split("-", 1)[1])
    return explain_file(path, exercise=ex.id, metric=ex.metric, arch="sm_90")


def _line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


@pytest.fixture(scope="module")
def solutions():
    return {f: _explain(CATALOG / f / "solution.py", f) for f in TRITON}


def test_a_triton_solution_is_explained_with_its_registers_launch_and_lines(solutions):
    folder = "50-triton-affine-clamp"
    path = CATALOG / folder / "solution.py"
    e = solutions[folder]
    (k,) = e.kernels
    assert k.name == "affine_clamp_kernel" and not k.error, e.notes
    assert k.line == _line_of(path, "def affine_clamp_kernel")
    assert k.resources["registers"] > 0
    assert k.launch["block"] == [32 * k.resources["num_warps"]]
    assert k.launch["grid"][0] > 1000  # the timed size's grid: n / BLOCK programs
    assert k.occupancy is not None
    # the PTX's lines are the file's: the loads sit on the tl.load lines
    loads = [_line_of(path, f"= tl.load({p}_ptr") for p in ("x", "scale", "bias")]
    (width,) = [f for f in k.findings if f.kind == "vector-loads"]
    assert width.line == loads[0]
    assert f"lines {', '.join(map(str, loads))}" in width.detail
    assert "float4" not in width.text() and "multiples of 16" in width.verdict
    # the annotated source is the Python kernel, marked beside the load's line
    assert e.source[loads[0]].strip().startswith("x = tl.load(")
    assert loads[0] in e.marks()
    shown = "\n".join(e.annotated())
    assert f"{loads[0]:>4} ?     x = tl.load(x_ptr" in shown


@pytest.mark.parametrize("folder", TRITON)
def test_no_triton_solution_gets_a_warning(solutions, folder):
    e = solutions[folder]
    assert e.kernels and not any(k.error for k in e.kernels), e.notes
    warned = [f.card_line() for k in e.kernels for f in k.findings if f.severity >= 2]
    assert not warned, "\n".join(e.card())


def test_an_autotuned_kernel_names_the_config_it_was_compiled_with(solutions):
    e = solutions["52-triton-matmul"]
    (k,) = e.kernels
    said = [n for n in e.notes if "autotune" in n]
    assert said and "the first of 4 autotune configs" in said[0] and "num_warps=8" in said[0]
    assert k.launch["block"] == [256]  # the first config's 8 warps
    assert k.resources["shared_dynamic"] > 0  # its pipeline's tiles, in shared memory


@pytest.mark.parametrize(
    ("planted", "stride", "sectors", "severity"),
    [("strided.py", "3", "3x", 2), ("column.py", "cols", "8x", 3)],
)
def test_a_planted_strided_load_is_flagged_on_its_line(planted, stride, sectors, severity):
    path = FIX / planted
    e = _explain(path, "50-triton-affine-clamp")
    (k,) = e.kernels
    line = _line_of(path, "the planted stride")
    (f,) = [f for f in k.findings if f.kind == "coalescing"]
    assert f.line == line and f.severity == severity, e.card()
    assert f.data["stride"] == stride and f"{sectors} the sectors" in f.verdict
    assert e.worst_line() is f


def test_a_function_that_raises_gets_one_line():
    e = _explain(FIX / "raises.py", "50-triton-affine-clamp")
    assert not e.kernels
    (note,) = [n for n in e.notes if n.startswith("Triton")]
    assert "ValueError: not written yet" in note and "\n" not in note
    assert "Traceback" not in note


def test_triton_kernels_are_found_by_their_decorators():
    text = (
        "import triton\nfrom triton import jit as J\nimport triton.language as tl\n\n"
        "@triton.jit\ndef a(x):\n    pass\n\n"
        "@triton.autotune(configs=[], key=[])\n@triton.jit\ndef b(x):\n    pass\n\n"
        "@J\ndef c(x):\n    pass\n\n"
        "@other.jit\ndef d(x):\n    pass\n"
    )
    found = {f.name: (f.first, f.line, f.last) for f in jit_functions(text)}
    assert found == {"a": (5, 6, 7), "b": (9, 11, 12), "c": (14, 15, 16)}
    assert jit_functions("def broken(:\n") == []


def test_triton_without_an_exercise_says_what_it_needs():
    text = (FIX / "strided.py").read_text()
    e = explain(text, filename="strided.py")
    assert not e.kernels and any("under its exercise" in n for n in e.notes)
    assert e.source  # the kernel's lines are still shown


def test_bitwise_reading_keeps_a_lane_index_through_triton_masks():
    # Triton's offsets: ((tid << 2) & 508) | (pid << 10), then | 1 for the thread's next element
    text = "\n".join(
        [
            ".visible .entry k(",
            ".param .u64 .ptr .global .align 1 k_param_0",
            ")",
            "{",
            "ld.param.u64 %rd1, [k_param_0];",
            "mov.u32 %r1, %tid.x;",
            "shl.b32 %r2, %r1, 2;",
            "and.b32 %r3, %r2, 508;",
            "mov.u32 %r4, %ctaid.x;",
            "shl.b32 %r5, %r4, 10;",
            "or.b32 %r6, %r3, %r5;",
            "or.b32 %r7, %r6, 1;",
            "shr.u32 %r8, %r1, 5;",
            "mul.wide.s32 %rd2, %r7, 4;",
            "add.s64 %rd3, %rd1, %rd2;",
            "ld.global.b32 %r9, [%rd3];",
            "ret;",
            "}",
        ]
    )
    fn = ptx.parse(text)["k"]
    assert fn.params == ["k_param_0"]  # Triton's pointer parameters carry .ptr .global .align
    plain = ptx.Dataflow(fn)
    flow = ptx.Dataflow(fn, bitwise=True)
    assert plain.regs["%r7"].cx is None  # without it, `and` and `or` lose the lane
    assert ptx.pconst(flow.regs["%r7"].cx) == 4 and ptx.pconst(flow.regs["%rd3"].cx) == 16
    assert flow.regs["%r8"].uniform  # the warp's index: one value for its lanes
