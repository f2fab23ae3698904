"""Whether a kernel shares values through shared memory, read from its PTX
(gpulab/exercises/ptx_shares.py): the GPU's side of `Watch.call_sharing_nothing`, which the
emulator answers by counting as the kernel runs. Compiled here with NVRTC, through the path a
check on a GPU takes (`own_work._ptx_of`), so no GPU is needed.

No false rejection: every correct catalog kernel that touches shared memory (references, experts,
right/ files and ladder rungs, in the four exercises that require shared memory and in every other
one that uses it) reads as sharing; the catalog's own-slot shortcuts read as sharing nothing. The
catalog test runs the same files through the whole check on a GPU (`-m gpu`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpulab.core import nvrtc
from gpulab.core.ptx_text import parse
from gpulab.exercises import ptx_shares
from gpulab.exercises.own_work import _SHARED_ACCESS, CallRecord, Launch, Watch, _ptx_entry, _ptx_of
from gpulab.testing import kernel_sources

pytestmark = pytest.mark.skipif(nvrtc.library() is None, reason="needs NVRTC (nvidia-cuda-nvrtc)")

CATALOG = Path(__file__).resolve().parents[2] / "gpulab" / "exercises" / "catalog"
# The exercises whose check requires shared memory (SHARED_MEMORY), and the rest that use it.
REQUIRED = ["26-stencil-shared", "30-transpose-tiled", "31-matmul-tiled", "33-conv1d"]
OTHERS = [
    "07-grid-2d",
    "08-conv2d",
    "18-deterministic-sum",
    "27-dot-reduction",
    "28-histogram",
    "29-scan",
    "32-softmax-rows",
    "35-reduction-kernel",
    "36-warp-argmax",
]
OWN_SLOT = ["26-stencil-shared/wrong/own-slot-only.py", "30-transpose-tiled/wrong/own-slot-only.py"]


def _correct_files(folder: Path) -> list[Path]:
    """The reference, the expert, right/ files and ladder rungs of an exercise."""
    names = ["solution.py", "expert.py", "right/*.py", "ladder/*.py"]
    return [p for pattern in names for p in sorted(folder.glob(pattern))]


def _reading(code: str, name: str) -> bool | None:
    ptx = _ptx_of(code)
    assert ptx is not None, f"{name}: NVRTC did not compile it"
    return ptx_shares.shares(ptx, name)


def _shared_kernels(folder: str, paths: list[Path]) -> dict[str, tuple[str, str]]:
    """The kernels of `paths` whose compiled code touches shared memory: those a check's
    `call_sharing_nothing` reads (a module's other kernels, no shared access, are not)."""
    found = kernel_sources.sources(CATALOG / folder, paths)
    out = {}
    for key, (code, name) in found.items():
        ptx = _ptx_of(code) if "__shared__" in code else None
        body = _ptx_entry(ptx, name) if ptx else None
        if body is not None and _SHARED_ACCESS.search(body):
            out[key] = (code, name)
    return out


def test_the_required_exercises_are_the_ones_that_require_shared_memory() -> None:
    required = sorted(
        p.parent.name for p in CATALOG.glob("*/check.py") if "SHARED_MEMORY" in p.read_text()
    )
    assert required == REQUIRED
    assert all((CATALOG / f).is_dir() for f in OTHERS)


@pytest.mark.parametrize("folder", REQUIRED + OTHERS)
def test_every_correct_catalog_kernel_with_shared_memory_reads_as_sharing(folder: str) -> None:
    kernels = _shared_kernels(folder, _correct_files(CATALOG / folder))
    assert kernels, f"{folder}: no kernel with __shared__ found"
    quiet = {key: _reading(code, name) for key, (code, name) in kernels.items()}
    assert all(v is True for v in quiet.values()), f"{folder}: read as sharing nothing: {quiet}"


@pytest.mark.parametrize("wrong", OWN_SLOT)
def test_the_catalog_own_slot_shortcuts_read_as_sharing_nothing(wrong: str) -> None:
    path = CATALOG / wrong
    kernels = _shared_kernels(path.parents[1].name, [path])
    assert len(kernels) == 1
    assert [_reading(code, name) for code, name in kernels.values()] == [False]
    # on a GPU the check itself now shows it: no line marks it emulator-only any more
    assert not any(ln.startswith("# emulator-only:") for ln in path.read_text().splitlines()[:3])


# Kernels written for this test. Each names what it shows; `window` is a 1-D stencil frame.
def _window(body: str, shared: str = "__shared__ float s[258];") -> str:
    return (
        'extern "C" __global__ void k(const float* a, float* out, int n) {\n'
        f"    {shared}\n    int t = threadIdx.x, i = blockIdx.x * 256 + t;\n{body}\n}}\n"
    )


SHARING = {
    # one row of threads fills the tile, every row reads it through the very same register:
    # the store does not come before the load on every path, so it is another thread's value
    "broadcast-down-a-column": (
        'extern "C" __global__ void k(const float* x, float* out, int n) {\n'
        "    __shared__ float xs[32];\n"
        "    int tx = threadIdx.x, ty = threadIdx.y;\n"
        "    if (ty == 0) xs[tx] = x[blockIdx.x * 32 + tx];\n"
        "    __syncthreads();\n"
        "    out[(blockIdx.x * 32 + tx) * 8 + ty] = xs[tx] * ty;\n"
        "}\n"
    ),
    # radius 1 with its halo stored through the centre's register at other offsets: the loads
    # match the stores operand for operand, and still read the neighbours' values
    "halo-at-offsets-of-one-register": _window(
        "    s[t + 1] = i < n ? a[i] : 0.0f;\n"
        "    if (t == 0) s[t] = i > 0 ? a[i - 1] : 0.0f;\n"
        "    if (t == 255) s[t + 2] = i + 1 < n ? a[i + 1] : 0.0f;\n"
        "    __syncthreads();\n"
        "    if (i < n) out[i] = s[t] + s[t + 1] + s[t + 2];"
    ),
    # each thread stores then reads its own slot, and later reads its neighbour's
    "own-slot-then-neighbour": _window(
        "    s[t] = i < n ? a[i] : 0.0f;\n"
        "    float mine = s[t];\n"
        "    __syncthreads();\n"
        "    if (i < n) out[i] = mine + (t < 255 ? s[t + 1] : 0.0f);"
    ),
    # the slot a thread reads moves round the tile, one step a pass: load before store
    # the slot a thread reads moves round the tile, one step a pass: its load comes before
    # its store, so it reads what another thread stored the pass before
    "rotating-slot": _window(
        "    volatile float* p = s;\n"
        "    float v = 0.0f;\n"
        "    for (int k = 0; k < n; ++k) {\n"
        "        int j = (t + k) & 255;\n"
        "        v += p[j];\n"
        "        __syncthreads();\n"
        "        p[j] = v;\n"
        "        __syncthreads();\n"
        "    }\n"
        "    if (i < n) out[i] = v;"
    ),
    # one value for the whole block, written by thread 0: a symbol address, no register
    "one-thread-for-all": _window(
        "    if (t == 0) s[0] = a[blockIdx.x];\n    __syncthreads();\n    if (i < n) out[i] = s[0];"
    ),
    "shared-atomic": _window(
        "    if (t == 0) s[0] = 0.0f;\n"
        "    __syncthreads();\n"
        "    if (i < n) atomicAdd(&s[0], a[i]);\n"
        "    __syncthreads();\n"
        "    if (t == 0) out[blockIdx.x] = s[0];"
    ),
    # the tile handed to a helper the compiler keeps apart, as a plain (generic) pointer
    "generic-pointer-to-a-helper": (
        "__device__ __noinline__ float sum3(const float* p) { return p[0] + p[1] + p[2]; }\n"
        + _window(
            "    s[t + 1] = i < n ? a[i] : 0.0f;\n"
            "    if (t < 2) s[t * 257] = 0.0f;\n"
            "    __syncthreads();\n"
            "    float* volatile q = s + t;\n"
            "    if (i < n) out[i] = sum3(q);"
        )
    ),
    # the neighbour's slot read in a helper that calls one declared ahead of it: the PTX holds
    # that declaration (parameters over several lines, no body) before the helper's own body
    "load-in-a-helper-after-a-declaration": (
        "__device__ __noinline__ float g(float v);\n"
        "__device__ __noinline__ float f(const float* p, int t) { return g(p[(t + 1) & 255]); }\n"
        + _window("    s[t] = a[i];\n    __syncthreads();\n    if (i < n) out[i] = f(s, t);")
        + "__device__ __noinline__ float g(float v) { return 2.0f * v; }\n"
    ),
}

NOT_SHARING = {
    # stored, a barrier, read back through the same register: the barrier keeps the load
    "own-slot-across-a-barrier": _window(
        "    s[t] = i < n ? a[i] : 0.0f;\n    __syncthreads();\n    if (i < n) out[i] = 2.0f * s[t];"
    ),
    # the index recomputed another way: the compiler folds it into the same register
    "own-slot-index-recomputed": _window(
        "    s[t] = i < n ? a[i] : 0.0f;\n"
        "    __syncthreads();\n"
        "    int back = i - (int)blockIdx.x * 256;\n"
        "    if (i < n) out[i] = 3.0f * s[back];"
    ),
    "stored-never-read": _window("    s[t] = a[i];\n    if (i < n) out[i] = a[i];"),
}

# A shortcut the reading cannot prove, given the benefit of the doubt (so it passes on a GPU, as
# the module doc says): each thread's own slot, read back through an index the compiler cannot
# see is the same (a volatile copy of it), so the load's register differs from the store's.
MISSED = _window(
    "    volatile int again = t;\n"
    "    s[t] = i < n ? a[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    if (i < n) out[i] = 2.0f * s[again];"
)


@pytest.mark.parametrize("name", sorted(SHARING))
def test_kernels_that_share_read_as_sharing(name: str) -> None:
    assert _reading(SHARING[name], "k") is True


@pytest.mark.parametrize("name", sorted(NOT_SHARING))
def test_own_slot_kernels_read_as_sharing_nothing(name: str) -> None:
    assert _reading(NOT_SHARING[name], "k") is False


def test_an_own_slot_read_through_another_register_gets_the_benefit_of_the_doubt() -> None:
    assert _reading(MISSED, "k") is True


def test_a_declared_function_keeps_its_own_body() -> None:
    ptx = _ptx_of(SHARING["load-in-a-helper-after-a-declaration"])
    assert ptx is not None and ";\n" in ptx.split(".func", 2)[1]  # the declaration comes first
    bodies = {name: fn for name, fn in parse(ptx).items() if not fn.entry}
    assert len(bodies) == 2
    loads = [n for n, fn in bodies.items() if any(i.op.startswith("ld.shared") for i in fn.insns)]
    assert len(loads) == 1 and "1f" in loads[0]  # f's body under f's name, not g's


def test_no_such_entry_reads_as_unknown_and_readings_are_cached() -> None:
    ptx = _ptx_of(NOT_SHARING["stored-never-read"])
    assert ptx is not None
    assert ptx_shares.shares(ptx, "nowhere") is None
    before = ptx_shares._shares.cache_info().hits
    assert ptx_shares.shares(ptx, "k") is ptx_shares.shares(ptx, "k") is False
    assert ptx_shares._shares.cache_info().hits > before


def _launch(code: str, threads: int, options: tuple[str, ...] = ()) -> Launch:
    """A launch as a GPU's check records it: no emulator counts (ran is None), the kernel's C
    source and options on its wrapper and the static shared memory its cubin declares."""
    inner = SimpleNamespace(shared_size_bytes=1032)
    wrapper = SimpleNamespace(source=code, options=options, inner=inner)
    return Launch("k", "RawKernel", grid=(threads // 256,), block=(256,), wrapper=wrapper)


def test_on_a_gpu_the_largest_call_is_judged_from_its_compiled_code() -> None:
    watch = Watch()
    own = NOT_SHARING["own-slot-across-a-barrier"]
    shares = SHARING["own-slot-then-neighbour"]
    watch.calls = [CallRecord([_launch(shares, 256)]), CallRecord([_launch(own, 1 << 20)])]
    assert watch.call_sharing_nothing() == 2
    # the largest call shared: the small own-slot one is no evidence (no neighbour to share with)
    watch.calls = [CallRecord([_launch(own, 256)]), CallRecord([_launch(shares, 1 << 20)])]
    assert watch.call_sharing_nothing() is None
    # one launch of the largest call shares: that call shares
    watch.calls = [CallRecord([_launch(own, 1 << 19), _launch(shares, 1 << 19)])]
    assert watch.call_sharing_nothing() is None
    # code that cannot be read (no C source): the benefit of the doubt
    blind = _launch(own, 1 << 20)
    blind.wrapper.source = ""
    watch.calls = [CallRecord([blind])]
    assert watch.call_sharing_nothing() is None


def test_the_code_is_read_as_compiled_with_the_kernels_own_options() -> None:
    """A `-D` the source's `#if` reads picks the kernel CuPy built: read without it, the other
    branch (here an own-slot one) would fail a kernel that shares."""
    code = _window(
        "    s[t] = i < n ? a[i] : 0.0f;\n"
        "    __syncthreads();\n"
        "#ifdef NEIGHBOUR\n"
        "    if (i < n) out[i] = t < 255 ? s[t + 1] : 0.0f;\n"
        "#else\n"
        "    if (i < n) out[i] = s[t];\n"
        "#endif"
    )
    watch = Watch()
    watch.calls = [CallRecord([_launch(code, 1 << 20, ("-DNEIGHBOUR",))])]
    assert watch.call_sharing_nothing() is None
    watch.calls = [CallRecord([_launch(code, 1 << 20)])]
    assert watch.call_sharing_nothing() == 1
