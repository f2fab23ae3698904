"""Whose work was it (gpulab/exercises/own_work.py), on the CPU through the fake CuPy.

The kernel counting, the library call named from the learner's source, the check's own kernels
left uncounted, early returns on a busy non-blocking stream, and the per-call checks of the timed
calls (work skipped on a repeated call fails, and says so).
"""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from gpulab.emulator import toolchain
from gpulab.exercises import api
from gpulab.exercises.own_work import OwnWorkError, Watch, _in_host_mapping, library_calls
from gpulab.exercises.speed import _CallChecks, _TimedCallWrong
from gpulab.testing import fake_cupy

ADD = r"""
extern "C" __global__ void add(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""


@pytest.fixture
def cupy_fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    if toolchain.compiler() is None:
        pytest.skip("no host C++ compiler for the CUDA emulator")
    return fake_cupy.install(monkeypatch)


def _learner(tmp_path: Path, body: str) -> Path:
    """The learner's file: `body` (dedented), which may name the CUDA source as SOURCE."""
    path = tmp_path / "learner.py"
    path.write_text(textwrap.dedent(body).replace("SOURCE", repr(ADD)))
    return path


def _load(watch: Watch, path: Path) -> dict:
    ns: dict = {}
    with watch.loading():
        exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns


def _refused(path: Path, match: str) -> None:
    """The learner's `add` at `path`, called once under a watch that asks for their own kernel,
    fails with an OwnWorkError matching `match`."""
    watch = Watch(require_kernel=True, source=path)
    watch.install()
    try:
        fn = watch.call(_load(watch, path)["add"])
        with pytest.raises(OwnWorkError, match=match):
            fn(*_arrays())
    finally:
        watch.uninstall()


def _device(a: np.ndarray) -> np.ndarray:
    """`a` in the fake's device memory: a kernel handed a plain NumPy array is handed host memory."""
    return sys.modules["cupy"].asarray(a)


def _arrays(n: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.arange(n, dtype=np.float32)
    return _device(a), _device(a * 2), _device(np.full(n, np.nan, dtype=np.float32))


def test_a_launch_of_the_learners_kernel_counts(tmp_path: Path, cupy_fake: ModuleType) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as cp, numpy as np
        K = cp.RawKernel(SOURCE, "add")
        def add(a, b, out):
            K(((a.size + 255) // 256,), (256,), (a, b, out, np.int32(a.size)))
        """,
    )
    watch = Watch(require_kernel=True, source=path)
    watch.install()
    try:
        fn = watch.call(_load(watch, path)["add"])
        a, b, out = _arrays()
        fn(a, b, out)
        assert np.array_equal(out, a + b)
        assert watch.compiled == [("add", "RawKernel")]
        (launch,) = watch.calls[-1].launches
        assert launch.kernel == "add" and launch.grid == (1,) and launch.block == (256,)
    finally:
        watch.uninstall()
    assert sys.modules["cupy"].RawKernel is not None
    assert not hasattr(sys.modules["cupy"].RawKernel, "__wrapped__")


def test_the_library_doing_the_work_is_named(tmp_path: Path, cupy_fake: ModuleType) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as cp, numpy as np
        K = cp.RawKernel(SOURCE, "add")
        def add(a, b, out):
            cp.add(a, b, out=out)
        """,
    )
    watch = Watch(require_kernel=True, source=path)
    watch.install()
    try:
        fn = watch.call(_load(watch, path)["add"])
        with pytest.raises(OwnWorkError) as err:
            fn(*_arrays())
    finally:
        watch.uninstall()
    text = str(err.value)
    assert text.startswith("no kernel of yours ran: cupy.add (line 5) did the work")
    assert "compiled add but never launched it" in text


def test_a_file_without_a_kernel_is_told_so(tmp_path: Path, cupy_fake: ModuleType) -> None:
    path = _learner(tmp_path, "def add(a, b, out):\n    out[...] = a + b\n")
    _refused(path, "your file compiles no kernel")


def test_elementwise_and_reduction_kernels_count(tmp_path: Path, cupy_fake: ModuleType) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as cp
        twice = cp.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x", "twice")
        total = cp.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0", "total")
        def f(x, out):
            twice(x, out)
            return total(out)
        """,
    )
    watch = Watch(require_kernel=True, source=path)
    watch.install()
    try:
        fn = watch.call(_load(watch, path)["f"])
        x = _device(np.ones(8, dtype=np.float32))
        out = _device(np.empty(8, dtype=np.float32))
        assert float(fn(x, out)) == 16.0
        assert [launch.kind for launch in watch.calls[-1].launches] == [
            "ElementwiseKernel",
            "ReductionKernel",
        ]
    finally:
        watch.uninstall()


def test_the_checks_own_kernels_are_not_the_learners(cupy_fake: ModuleType) -> None:
    watch = Watch(require_kernel=True)
    watch.install()
    try:
        mine = sys.modules["cupy"].RawKernel(ADD, "add")  # made outside any learner code
        assert type(mine).__module__ == "gpulab.emulator.cuda"
        assert watch.compiled == []
    finally:
        watch.uninstall()


def test_a_launch_outside_a_call_is_not_counted(tmp_path: Path, cupy_fake: ModuleType) -> None:
    """A kernel that runs only at import (a warm-up) did not do any call's work."""
    path = _learner(
        tmp_path,
        """
        import cupy as cp, numpy as np
        K = cp.RawKernel(SOURCE, "add")
        _a = cp.ones(4, dtype=cp.float32)
        K((1,), (4,), (_a, _a, _a, np.int32(4)))
        def add(a, b, out):
            out[...] = a + b
        """,
    )
    _refused(path, "no kernel of yours ran")


def test_a_stream_made_through_cupys_module_alias_is_watched_too(
    tmp_path: Path, cupy_fake: ModuleType
) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as cp
        S = cp.cuda.stream.Stream(non_blocking=True)
        def f(x):
            return S
        """,
    )
    real = cupy_fake.cuda.stream.Stream
    watch = Watch(source=path)
    watch.install()
    try:
        assert cupy_fake.cuda.stream.Stream is cupy_fake.cuda.Stream is not real
        fn = watch.call(_load(watch, path)["f"])
        side = fn(None)
        assert [(lib, nb) for lib, _, nb in watch.streams] == [("cupy", True)]
        side.done = False
        with pytest.raises(OwnWorkError, match="returned before its kernel finished"):
            fn(None)
    finally:
        watch.uninstall()
    assert cupy_fake.cuda.stream.Stream is real


def test_a_busy_non_blocking_stream_at_return_is_an_early_return(
    tmp_path: Path, cupy_fake: ModuleType
) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as cp
        S = cp.cuda.Stream(non_blocking=True)
        B = cp.cuda.Stream()
        def f(x):
            return S, B
        """,
    )
    watch = Watch(source=path)
    watch.install()
    try:
        fn = watch.call(_load(watch, path)["f"])
        side, blocking = fn(None)
        assert [(lib, nb) for lib, _, nb in watch.streams] == [("cupy", True), ("cupy", False)]
        side.done = False  # the emulator's streams finish at once; a GPU's may not
        with pytest.raises(OwnWorkError, match="returned before its kernel finished"):
            fn(None)
        side.done, blocking.done = True, False  # a blocking stream: the caller's stream waits
        fn(None)
    finally:
        watch.uninstall()


def test_library_calls_reads_aliases_and_skips_plumbing(tmp_path: Path) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as xp
        from cupy import cumsum as running
        import cupyx.scipy.ndimage
        def f(a, out):
            b = xp.empty_like(a)
            xp.copyto(out, a.T)
            running(a, out=b)
            cupyx.scipy.ndimage.convolve(a, b)
            k = xp.RawKernel("", "k")
            n = xp.int32(3)
        """,
    )
    assert library_calls(path) == [
        ("cupy.copyto", 7),
        ("cupy.cumsum", 8),
        ("cupyx.scipy.ndimage.convolve", 9),
    ]


def _cpu_spec(fn, skip_after: int | None = None) -> api.TimingSpec:
    """A CPU spec over two input sets whose learner can skip work after some calls."""

    def setup(i: int) -> tuple:
        a = np.full(64, float(i + 1), dtype=np.float32)
        return a, np.empty_like(a)

    def prepare(io: tuple) -> None:
        io[-1].fill(np.nan)

    def check_call(io: tuple, returned: object) -> str | None:
        bad = api.compare_arrays(io[0] * 2, io[-1])
        return None if bad is None else bad.message

    return api.TimingSpec(
        setup=setup,
        learner=lambda io: fn(*io),
        library=None,
        library_name="",
        work=1.0,
        metric="GB/s",
        ceiling="copy",
        sets=2,
        prepare=prepare,
        check_call=check_call,
    )


def _time(spec: api.TimingSpec, calls: int, every: bool) -> _CallChecks:
    sets = [spec.setup(i) for i in range(spec.sets)]
    turn = [0]
    checks = _CallChecks(spec, sets, turn, spec.sets, every=every)

    def rotate() -> None:
        turn[0] = (turn[0] + 1) % spec.sets

    before = checks.before(rotate)
    for _ in range(calls):
        before()
        checks.call()
        checks.after()
    return checks


def test_every_timed_call_is_checked_on_a_device() -> None:
    def honest(a, out):
        out[...] = a * 2

    checks = _time(_cpu_spec(honest), calls=9, every=True)
    assert checks.checked == 9


def test_a_repeated_call_that_skips_work_fails_naming_it() -> None:
    seen: set[int] = set()

    def lazy(a, out):
        if id(out) in seen:
            return
        seen.add(id(out))
        out[...] = a * 2

    with pytest.raises(_TimedCallWrong) as err:
        _time(_cpu_spec(lazy), calls=9, every=False)  # a CPU: the first repeat is always checked
    text = str(err.value)
    assert text.startswith("timed call 3: ") and "work kept from an earlier call" in text


def test_the_cpus_sampled_checks_ignore_a_patched_random_module(monkeypatch) -> None:
    """A third of a CPU's later timed calls are checked: a learner who makes random.Random never
    pick one (always 1.0) still has them picked, and a call that skips work is caught."""
    import random

    monkeypatch.setattr(random.Random, "random", lambda self: 1.0)
    visits: dict[int, int] = {}

    def skips_later(a, out):
        visits[id(out)] = visits.get(id(out), 0) + 1
        if visits[id(out)] >= 3:  # the first repeat is always checked: skip after it
            return
        out[...] = a * 2

    with pytest.raises(_TimedCallWrong, match="work kept from an earlier call"):
        _time(_cpu_spec(skips_later), calls=60, every=False)  # 1 in 1.4e10 to miss all 55


def test_a_timed_calls_patch_is_put_back_before_its_check(monkeypatch) -> None:
    """What a timed call rebinds (numpy.array_equal, here) is put back before the grader's check
    of that call runs, through the restore the timing is given."""
    import numpy

    from gpulab.exercises.sandbox import Guard

    guard = Guard()
    real = numpy.array_equal
    seen: list[object] = []
    spec = _cpu_spec(lambda a, out: out.__setitem__(Ellipsis, a * 2))
    checks = _CallChecks(spec, [spec.setup(i) for i in range(spec.sets)], [0], spec.sets,
                         every=True, restore=guard.restore)  # fmt: skip
    original_check = spec.check_call

    def check_call(io, returned):
        seen.append(numpy.array_equal)
        return original_check(io, returned)

    checks.spec = dataclasses.replace(spec, check_call=check_call)

    def patching_call() -> None:
        a, out = checks.sets[0]
        out[...] = a * 2
        numpy.array_equal = lambda *a, **k: True

    checks.call = patching_call  # type: ignore[method-assign]
    try:
        checks.before(lambda: None)()
        checks.call()
        checks.after()
    finally:
        numpy.array_equal = real
    assert seen == [real] and "numpy.array_equal" in guard.changed


def test_torchs_own_lazy_wrap_is_not_the_learners_patch() -> None:
    """torch._dynamo, imported by the first call of some torch functions during a learner's call,
    rebinds torch.manual_seed to a wrapper of itself: not reported, not undone. A learner's own
    wrapper is both."""
    import torch

    from gpulab.exercises.sandbox import Guard

    original = torch.manual_seed
    ns: dict = {}
    code = "def make(f):\n    def inner(*a):\n        return f(*a)\n    inner.__wrapped__ = f\n    return inner\n"
    exec(compile(code, "/site-packages/torch/_compile.py", "exec"), ns)
    try:
        guard = Guard()
        torch.manual_seed = ns["make"](original)  # as torch._compile does
        assert guard.restore() == []
        wrapped = torch.manual_seed
        assert wrapped is not original
        guard = Guard()
        torch.manual_seed = lambda seed: None  # the learner's
        assert guard.restore() == ["torch.manual_seed"]
        assert torch.manual_seed is wrapped
    finally:
        torch.manual_seed = original


def test_a_launch_by_keyword_is_read_as_one_by_position(tmp_path: Path, cupy_fake: ModuleType):
    path = _learner(
        tmp_path,
        """
        import cupy as cp, numpy as np
        K = cp.RawKernel(SOURCE, "add")
        def add(a, b, out):
            K(grid=((a.size + 255) // 256,), block=(256,), args=(a, b, out, np.int32(a.size)))
        """,
    )
    watch = Watch(require_kernel=True, source=path)
    watch.install()
    try:
        fn = watch.call(_load(watch, path)["add"])
        a, b, out = _arrays()
        fn(a, b, out)
        (launch,) = watch.calls[-1].launches
        assert launch.grid == (1,) and launch.block == (256,) and len(launch.pointers) == 3
    finally:
        watch.uninstall()


def test_a_kernel_handed_host_memory_fails(tmp_path: Path, cupy_fake: ModuleType) -> None:
    """The work ferried out of device memory (on a GPU: pinned host memory mapped into the
    device's address space; on the emulator: a NumPy array) fails, naming it."""
    path = _learner(
        tmp_path,
        """
        import cupy as cp, numpy as np
        K = cp.RawKernel(SOURCE, "add")
        def add(a, b, out):
            host = np.empty(a.size, dtype=np.float32)
            K((1,), (256,), (a, b, host, np.int32(a.size)))
            out[...] = cp.asarray(host)
        """,
    )
    _refused(path, "add was handed memory outside the device")


def test_an_integer_address_of_host_memory_is_named_however_it_is_typed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an H200 host a NumPy uint64 holding a host buffer's address was never taken for an
    address, and the kernel faulted before the rule could name it: any integer type counts
    (read through __index__), a float, a bool or an array does not."""
    from gpulab.exercises import own_work

    driver = SimpleNamespace(
        cuda=SimpleNamespace(
            runtime=SimpleNamespace(pointerGetAttributes=lambda p: SimpleNamespace(type=0))
        )
    )
    monkeypatch.setitem(sys.modules, "cupy", driver)
    host = np.empty(64, np.float32)
    at = host.ctypes.data
    for given in (np.uint64(at), np.int64(at), at, np.uintp(at)):
        assert "host memory" in own_work.host_memory((given, np.int32(64))), type(given)
    for given in (float(at), np.float64(at), True, np.array([at], np.uint64)):
        assert own_work.host_memory((given,)) == "", type(given)


def test_a_fault_after_a_low_host_address_is_named_as_memory_outside_the_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an H200 host the heap sat at 0x452f9ad0: a kernel handed a NumPy buffer's address
    there faulted, and the check said only "illegal memory access". An address under 4 GiB in
    the process's writable pages is a suspect (an element count can fall there too): not
    refused, named when the GPU faults; one in read-only pages (the program's code) is not."""
    from gpulab.core import events as ev
    from gpulab.exercises import own_work, run_check
    from gpulab.exercises.outcome import CheckResult
    from gpulab.exercises.run_check import LearnerCrash

    maps = tmp_path / "maps"
    maps.write_text(
        "00400000-00600000 r-xp 00000000 08:01 1 /usr/bin/python3\n"
        "45000000-46000000 rw-p 00000000 00:00 0 [heap]\n"
    )
    real = own_work._in_host_mapping
    monkeypatch.setattr(
        own_work, "_in_host_mapping", lambda p, m="", **kw: real(p, str(maps), **kw)
    )
    driver = SimpleNamespace(
        cuda=SimpleNamespace(
            runtime=SimpleNamespace(pointerGetAttributes=lambda p: SimpleNamespace(type=0))
        )
    )
    monkeypatch.setitem(sys.modules, "cupy", driver)
    kept = own_work.low_integers((np.int64(64), np.uint64(0x452F9AD0), np.float32(1e6)))
    assert kept == (0x452F9AD0,)  # the launch keeps the value only: nothing asked yet
    named = own_work.low_host_address(kept)
    assert "0x452f9ad0" in named and "host memory" in named
    assert own_work.host_memory((np.uint64(0x452F9AD0),)) == ""  # not refused before it runs
    assert own_work.low_host_address((0x500000,)) == ""  # code pages: not written
    assert own_work.low_host_address((1 << 22,)) == ""  # in no mapping

    watch = Watch()
    watch.launches.append(own_work.Launch("ferry_in", "RawModule", suspect=kept))
    fault = RuntimeError("CUDA error: an illegal memory access was encountered")
    result = CheckResult("dot-reduction", "pass", "", 7, "x.py")
    with pytest.raises(LearnerCrash) as crash:
        run_check._crash_if_fatal(fault, result, "n=1", 0.0, watch)
    assert crash.value.kind == ev.KIND_ILLEGAL_ADDRESS
    assert "ferry_in was handed memory outside the device" in result.message
    assert "0x452f9ad0" in result.message and result.message.startswith("n=1: ")
    plain = CheckResult("dot-reduction", "pass", "", 7, "x.py")
    with pytest.raises(LearnerCrash):
        run_check._crash_if_fatal(fault, plain, "n=1", 0.0, Watch())
    assert (
        plain.message
        == "n=1: illegal memory access on the GPU: CUDA error: an illegal memory access was encountered"
    )


def test_where_a_rawkernel_is_asked_for_cupy_may_not_write_the_kernel(
    tmp_path: Path, cupy_fake: ModuleType
) -> None:
    path = _learner(
        tmp_path,
        """
        import cupy as cp
        K = cp.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a + b", "add")
        def add(a, b, out):
            K(a, b, out)
        """,
    )
    for own, fails in ((True, False), ("raw", True)):
        watch = Watch(require_kernel=own, source=path)
        watch.install()
        try:
            fn = watch.call(_load(watch, path)["add"])
            if fails:
                with pytest.raises(OwnWorkError, match="ElementwiseKernel lets CuPy write"):
                    fn(*_arrays())
            else:
                fn(*_arrays())
        finally:
            watch.uninstall()


def test_a_ptx_shuffle_by_zero_moves_nothing_whether_written_or_in_a_register():
    """NVRTC put warp-argmax's xor-by-0 shortcut's offset in a register (`mov.u32 %r23, 0`), and
    the first PTX rule, which read only an immediate 0, let it pass on an H200."""
    from gpulab.exercises import own_work

    body = (
        "\tmov.u32 \t%r23, 0;\n\tmov.u32 \t%r27, 16;\n"
        "\tshfl.sync.bfly.b32 \t%r3|%p1, %r43, %r23, %r24, %r26;\n"
    )
    still = "shfl.sync.bfly.b32 \t%r3|%p1, %r43, %r23, %r24, %r26;"
    moving = "shfl.sync.bfly.b32 \t%r6|%p2, %r44, %r27, %r28, %r30;"
    assert own_work._still(still, body)
    assert not own_work._still(moving, body)
    assert own_work._still("shfl.sync.down.b32 \t%r3|%p1, %r43, 0, 31, -1;", "")
    assert not own_work._still("shfl.sync.down.b32 \t%r3|%p1, %r43, 1, 31, -1;", "")
    # an index shuffle by a fixed lane broadcasts that lane's value: a move for the others
    assert not own_work._still("shfl.sync.idx.b32 \t%r3|%p1, %r43, 0, 31, -1;", "")


def test_an_address_inside_the_processes_own_pages_is_host_memory(tmp_path: Path) -> None:
    """On an H200 host the driver called a NumPy buffer's address unregistered (type 0), and a
    kernel handed it as an integer reached it: the process's own mappings say it is host
    memory; the GPU driver's device files' mappings are not."""
    maps = tmp_path / "maps"
    maps.write_text(
        "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
        "7f1000000000-7f1000200000 rw-s 00000000 00:05 7 /dev/nvidia-uvm\n"
    )
    assert _in_host_mapping(0x7F0000000010, str(maps))
    assert not _in_host_mapping(0x7F1000000010, str(maps))  # the driver's own
    assert not _in_host_mapping(0x7E0000000000, str(maps))  # in no mapping
    a = np.zeros(1000, np.float32)
    assert _in_host_mapping(a.ctypes.data)  # this process's real maps


def test_the_input_sample_is_drawn_from_the_oss_entropy_not_a_readable_state():
    """A timed call's sample positions: sorted, in range, new every call, all of a small input,
    and no random.Random in the grader's module whose state a call could read ahead
    (tree-reduction's wrong/predicts-the-input-sample kept one from the call before)."""
    import random

    from gpulab.exercises import speed

    a, b = speed._positions(10**8), speed._positions(10**8)
    assert 1000 <= len(a) <= speed.SAMPLE and a[0] >= 0 and a[-1] < 10**8
    assert np.all(np.diff(a) > 0) and not np.array_equal(a, b)
    assert np.array_equal(speed._positions(5), np.arange(5))
    assert not [v for v in vars(speed).values() if isinstance(v, random.Random)]


def test_a_call_that_leaves_the_thread_count_changed_is_refused() -> None:
    """A call that sets torch's thread count and puts it back is fine; an untimed one that leaves
    it changed has it put back; a timed one would have the yardstick, timed after it, run on one
    thread: refused and put back."""
    import torch

    was = torch.get_num_threads()
    threads = 2
    torch.set_num_threads(threads)
    watch = Watch()

    def tidy() -> int:
        torch.set_num_threads(1)
        torch.set_num_threads(threads)
        return 1

    def leaves_one() -> int:
        torch.set_num_threads(1)
        return 1

    try:
        assert watch.call(leaves_one)() == 1  # untimed: put back, nothing runs beside it
        assert torch.get_num_threads() == threads
        watch.timing = True
        assert watch.call(tidy)() == 1
        with pytest.raises(OwnWorkError, match="changed torch.set_num_threads"):
            watch.call(leaves_one)()
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(was)


def test_a_walk_of_the_objects_is_refused_to_borrowed_code_not_to_a_module() -> None:
    """The audit hook refuses gc's walks, frames and the interpreter's hooks where the learner
    asked for them (their module on the stack, or code exec'd under a borrowed name), directly or
    through inspect.currentframe; a module's own walk, as here, and a library's frame for its own
    use (namedtuple reads its caller's module name) are left alone."""
    import collections
    import gc
    import inspect

    from gpulab.exercises.sandbox import WalkRefused, refuse_walks

    refuse_walks()
    assert isinstance(gc.get_referrers(object()), list)  # this test module's own frame
    assert inspect.currentframe() is not None
    ns: dict = {"__name__": "torch.borrowed", "gc": gc, "inspect": inspect, "sys": sys}
    ns["collections"] = collections
    code = (
        "def walk():\n    return gc.get_objects()\n"
        "def here():\n    return inspect.currentframe()\n"
        "def hook():\n    sys.setprofile(None)\n"
        "def named():\n    return collections.namedtuple('P', 'a')(1)\n"
    )
    exec(compile(code, "<borrowed>", "exec"), ns)
    for name, what in (("walk", "gc.get_objects"), ("here", "_getframe"), ("hook", "setprofile")):
        with pytest.raises(WalkRefused, match=what):
            ns[name]()
    assert ns["named"]().a == 1


def test_processes_and_frames_through_the_standard_library_are_refused_to_the_learner(
    tmp_path: Path,
) -> None:
    """A process the learner's code starts or signals (a red team forked a NumPy child that did
    the sum, and CPU hogs it stopped during its own calls) is refused however it is reached:
    directly or through subprocess; one a library starts for its own work (torch's compile
    workers) is not. A frame a standard function takes on the learner's behalf (heapq.nsmallest
    resuming traceback.walk_stack, or calling sys._getframe as its key) is refused; the standard
    modules that take one for their own use (namedtuple, TypeVar, Enum, logging, warnings, a
    printed stack) still serve the learner."""
    import subprocess

    from gpulab.exercises.sandbox import WalkRefused, forget, fresh_name, load_text, refuse_walks

    refuse_walks()
    lib_path = tmp_path / "some_library.py"
    lib_path.write_text(
        "import subprocess, sys\n"
        "def spawn():\n"
        "    return subprocess.run([sys.executable, '-c', 'pass']).returncode\n"
        "def call(fn, *args):\n"
        "    return fn(*args)\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("some_library", lib_path)
    assert spec is not None and spec.loader is not None
    library = importlib.util.module_from_spec(spec)
    sys.modules["some_library"] = library
    spec.loader.exec_module(library)
    text = textwrap.dedent(
        """
        import collections, enum, heapq, logging, os, subprocess, sys, traceback, typing
        import warnings
        import some_library

        def fork():
            sys.audit("os.fork")  # the event os.fork raises before it forks
        def run():
            subprocess.run(["true"])
        def kill():
            os.kill(os.getpid(), 0)
        def heap_walk():
            return heapq.nsmallest(3, traceback.walk_stack(None), key=id)
        def heap_key():
            return heapq.nsmallest(1, [1], key=sys._getframe)
        def own_use():
            P = collections.namedtuple("P", "a")
            T = typing.TypeVar("T")
            E = enum.Enum("E", "a b")
            logging.getLogger("gpulab-test").info("a line")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                warnings.warn("a warning")
            return P(1).a, T.__name__, E.a.value, len(traceback.format_stack()) > 0
        def library_spawns():
            return some_library.spawn()
        def handed_fork():
            some_library.call(sys.audit, "os.fork")
        def handed_frame():
            return some_library.call(sys._getframe, 0)
        def context_frame():
            import contextlib
            return contextlib.contextmanager(sys._getframe)(0).gen
        def relayed():
            import torch.multiprocessing as tmp
            tmp.start_processes(print, nprocs=1, start_method="fork")
        """
    )
    learner = load_text(text, tmp_path / "learner.py", fresh_name("learner", "processes"))
    try:
        for name, what in (
            ("fork", "os.fork"),
            ("run", "subprocess.Popen"),
            ("kill", "os.kill"),
            ("heap_walk", "_getframe"),
            ("heap_key", "_getframe"),
            ("relayed", "os.fork"),
            # a library that calls what it is handed starts nothing, and takes no frame, for
            # itself: the learner's code handed it os.fork or sys._getframe (numpy.testing's
            # and torch's pytree passed gold so)
            ("handed_fork", "os.fork"),
            ("library_spawns", "subprocess.Popen"),
            ("handed_frame", "_getframe"),
            ("context_frame", "_getframe"),
        ):
            with pytest.raises(WalkRefused, match=what):
                getattr(learner, name)()
        assert learner.own_use() == (1, "T", 1, True)
        assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0  # ours
    finally:
        forget(learner)
        sys.modules.pop("some_library", None)
