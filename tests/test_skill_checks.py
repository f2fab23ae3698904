"""The mechanisms that make a check test the skill, not a proxy of it, each on its own: fresh
data element by element, the kernel trace's accounting, the one-thread rule and the DLPack
guard, results that must be plain, and the Guard over gpulab's own private functions.

The catalog's wrong/ and right/ solutions exercise them end to end (test_exercises_catalog,
test_kernel_track); these tests pin each rule's edges.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpulab.exercises import api, kernel_trace, refuse
from gpulab.exercises.fresh import Refresher
from gpulab.exercises.own_work import not_plain
from gpulab.exercises.sandbox import Guard

# ----------------------------------------------------------------------------------- fresh data


def test_every_element_changes_by_its_own_factor_and_no_call_repeats_another():
    refresh = Refresher()
    x = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    seen = [x.copy()]
    for _ in range(6):
        refresh(x)
        assert (x != seen[-1]).all()
        ratio = x / seen[-1]
        # not one map for the array: a kept sum cannot be scaled or shifted into the new one
        assert ratio.std() > 1e-3 and ratio.min() > 0.94 and ratio.max() < 1.06
        seen.append(x.copy())
    assert len({a.tobytes() for a in seen}) == len(seen)
    assert abs(float(x.mean())) < 0.05  # the distribution's centre stays where it was drawn


def test_integers_stay_in_their_range_and_whole_floats_stay_whole():
    refresh = Refresher()
    bins = np.random.default_rng(2).integers(0, 256, 5000).astype(np.int32)
    before = bins.copy()
    refresh(bins)
    assert (bins != before).all() and bins.min() >= 0 and bins.max() <= 255
    whole = np.random.default_rng(3).integers(-4, 5, 5000).astype(np.float32)
    before = whole.copy()
    refresh(whole)
    assert (whole != before).all() and (whole == np.round(whole)).all()
    assert whole.min() >= -4 and whole.max() <= 4  # exact sums stay exact


def test_torch_tensors_are_refreshed_in_place():
    torch = pytest.importorskip("torch")
    refresh = Refresher()
    t = torch.randn(4096)
    ptr, before = t.data_ptr(), t.clone()
    refresh(t)
    assert t.data_ptr() == ptr and bool((t != before).all())


# --------------------------------------------------------------------------------- kernel trace


def test_the_trace_counts_the_learners_kernels_launch_by_launch():
    ran = ["add_ten", "memset", "cupy_fill", "gpulab_lead"]
    assert kernel_trace.foreign(ran, ["add_ten"]) == []
    # a library kernel beside the learner's: the partial decoy
    assert kernel_trace.foreign([*ran, "cupy_add__float32"], ["add_ten"]) == ["cupy_add__float32"]
    # a library kernel that shares the learner's name is one kernel too many
    assert kernel_trace.foreign(["add", "add"], ["add"]) == ["add"]
    # a learner's kernel named like the library's is not theirs
    assert kernel_trace.foreign(["cupy_add"], ["cupy_add"]) == ["cupy_add"]
    # a demangled C++ signature is matched by the function's name, not a substring
    assert kernel_trace.foreign(["void scan<256>(float*, int)"], ["scan"]) == []
    assert kernel_trace.foreign(["void rescan(float*)"], ["scan"]) == ["void rescan(float*)"]
    # the profiler demangles every name: a C kernel named `h` is recorded as "unsigned char"
    # (histogram's one-thread shortcut on an H200 was named a library kernel for it)
    assert kernel_trace.foreign(["unsigned char"], ["h"]) == []
    assert kernel_trace.foreign(["int"], ["i"]) == []
    assert kernel_trace.foreign(["int"], ["h"]) == ["int"]
    # a few fills with a scalar a call are allocation; one a row (map-2d's row numbers) is work
    fills = ["cupy_copy__int_float32"] * (kernel_trace.FILLS + 2)
    assert kernel_trace.foreign(fills[:-2], []) == []
    assert kernel_trace.foreign([*fills, "memset"], []) == fills[:2]
    assert "filled arrays with a scalar" in kernel_trace.foreign_message(fills, [])
    assert kernel_trace.demangled("histogram") == "histogram"


def test_a_copy_counts_only_after_a_learner_kernel_that_returned_an_array():
    # out[...] = a.T alone is a copy kernel doing the whole transpose
    assert kernel_trace.foreign(["cupy_copy"], []) == ["cupy_copy"]
    # out[...] = fused(x, y): the fused kernel made a new array, its copy into out is theirs
    assert kernel_trace.foreign(["fused", "cupy_copy"], ["fused"], copies=1) == []
    assert kernel_trace.foreign(["fused", "cupy_copy", "cupy_copy"], ["fused"], copies=1) == [
        "cupy_copy"
    ]
    message = kernel_trace.foreign_message(["cupy_copy"], [])
    assert message.startswith("a library kernel ran inside your call: cupy_copy")


def test_a_fill_with_a_scalar_is_allocation_and_an_arrays_copy_is_not():
    # cupy.full(n, nan) and a.fill(1.5) copy from a Python scalar: named for its type
    for fill in ("cupy_copy__float_float64", "cupy_copy__int_int32", "cupy_copy__bool_bool"):
        assert kernel_trace.foreign([fill, "mine"], ["mine"]) == [], fill
    # a copy from an array names its dtype: work on the data (out[...] = a.T, a.astype)
    for copy in ("cupy_copy__float32_float32", "cupy_copy__float32_float64"):
        assert kernel_trace.foreign([copy, "mine"], ["mine"]) == [copy], copy


# --------------------------------------------------------------------- one thread, no exits


def test_a_thread_started_inside_a_watched_call_is_refused():
    pytest.importorskip("torch")
    allow = refuse.Allow(refuse.ALLOCATION_AND_VIEWS, "testing")
    with pytest.raises(refuse.RefusedCall, match="starts another thread or process"):  # noqa: SIM117
        with refuse.allowing(allow):
            threading.Thread(target=lambda: None).start()
    # and outside the block threads start as ever
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()


def test_dlpack_is_refused_inside_a_watched_call_by_any_name():
    torch = pytest.importorskip("torch")
    from gpulab.exercises.own_work import OwnWorkError, Watch

    kept = torch._C._to_dlpack  # a name bound before the watch exists is refused too
    watch = Watch()
    watch.around = lambda: refuse.allowing(refuse.Allow(frozenset(), "testing"))
    watch.install()
    try:
        export = torch._C._to_dlpack  # as a learner's file would bind it at import

        def learner(x: object) -> object:
            return export(x)

        with pytest.raises(OwnWorkError, match="DLPack"):
            watch.call(learner)(torch.ones(3))
    finally:
        watch.uninstall()
    assert torch._C._to_dlpack is kept


# ---------------------------------------------------------------------------- plain results


def test_results_that_compute_when_read_are_not_plain():
    torch = pytest.importorskip("torch")

    class Later(torch.Tensor):
        pass

    class Number:
        def __float__(self) -> float:
            return 1.0

    assert not_plain(torch.zeros(2)) == "" and not_plain((np.float32(1), [np.zeros(2)])) == ""
    assert not_plain(lambda x: x) == "" and not_plain(None) == ""
    assert "acts as an array or a number" in not_plain(torch.zeros(2).as_subclass(Later))
    assert "__float__" in not_plain(Number())
    assert not_plain({"out": Number()})  # inside containers too


# ----------------------------------------------------------------------------------- the Guard


def test_the_guard_puts_back_gpulab_private_functions():
    real = api._scan
    guard = Guard()
    api._scan = lambda *a, **k: (0, 0)  # every comparison would pass
    try:
        assert "gpulab.exercises.api._scan" in guard.restore()
        assert api._scan is real
    finally:
        api._scan = real


def test_the_guard_puts_back_gpulab_classes_and_a_property_and_calls_them_the_graders():
    """A red team rebound Rounds._one (a class, not a module, namespace) and made
    Watch.require_kernel a property that reads False: both are put back and named as the
    grader's own; NumPy's are put back but are not the grader's."""
    import numpy as np

    from gpulab.core.rounds import Rounds
    from gpulab.exercises.own_work import Watch

    real_one = Rounds._one
    guard = Guard(classes=True)
    Rounds._one = lambda self, c: 0.0
    Watch.require_kernel = property(lambda self: False)
    real_count = np._core.multiarray.count_nonzero
    np._core.multiarray.count_nonzero = lambda *a, **k: 0
    try:
        changed = guard.restore()
        assert {"Rounds._one", "Watch.require_kernel"} <= set(changed)
        assert Rounds._one is real_one and "require_kernel" not in vars(Watch)
        assert np._core.multiarray.count_nonzero is real_count
        assert {"Rounds._one", "Watch.require_kernel"} <= guard.own_changed
        assert not any("count_nonzero" in name for name in guard.own_changed)
    finally:
        Rounds._one = real_one
        vars(Watch).get("require_kernel") is not None and delattr(Watch, "require_kernel")
        np._core.multiarray.count_nonzero = real_count


def test_a_profile_hook_set_since_the_snapshot_is_taken_off_and_named():
    import sys

    guard = Guard()
    assert guard.hooks_changed() == []
    sys.setprofile(lambda *a: None)
    try:
        assert guard.hooks_changed() == ["sys.setprofile"]
        assert sys.getprofile() is None and "sys.setprofile" in guard.own_changed
    finally:
        sys.setprofile(None)


def test_the_guard_sees_a_patch_that_claims_to_equal_what_it_replaced():
    """restore() skips an untouched namespace in one pass; a stand-in whose == says yes to
    everything must still count as a change (identity, not equality)."""
    import numpy as np

    class Agrees:
        def __eq__(self, other):
            return True

        __hash__ = None

        def __call__(self, *a, **k):
            return True

    real = np.allclose
    guard = Guard()
    assert guard.restore() == []  # nothing touched: nothing put back
    np.allclose = Agrees()
    try:
        assert "numpy.allclose" in guard.restore()
        assert np.allclose is real
    finally:
        np.allclose = real


def test_torch_still_names_its_functions_after_a_watch_stood_in_for_them():
    """torch builds its table of function names at the first resolve_name and keeps it: built
    while the exits watch stood in for torch.as_tensor, it named the stand-in, and a later
    check's mode (profile-step's reads) could not name as_tensor (found through a worker that
    had run tree-reduction first)."""
    import torch
    import torch.overrides

    from gpulab.exercises import refuse

    torch.overrides._get_overridable_functions.cache_clear()
    with refuse.one_thread([], exits=True):
        torch.overrides.resolve_name(torch.add)  # a mode naming what ran, inside the watch
    assert torch.overrides.resolve_name(torch.as_tensor) == "torch.as_tensor"


def test_a_signal_handler_a_timer_and_a_gc_callback_are_taken_off_and_named():
    # Each runs Python between two bytecodes of whatever runs next: past a call's watch and
    # before the check reads its output (a red team finished triton-affine-clamp in a handler)
    import gc
    import signal

    guard = Guard()
    was = signal.getsignal(signal.SIGALRM)
    signal.signal(signal.SIGALRM, lambda *a: None)
    signal.setitimer(signal.ITIMER_REAL, 60.0)
    gc.callbacks.append(lambda *a: None)
    try:
        assert guard.hooks_changed() == ["a handler of SIGALRM", "signal.setitimer", "gc.callbacks"]
        assert signal.getsignal(signal.SIGALRM) is was
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert guard.hooks_changed() == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, was)


def test_handlers_are_read_past_a_rebound_signal_module(monkeypatch):
    """The hooks are read after every call, timed ones too, through the C module's readers
    bound at import: signal.getsignal rebound to lie hides no handler."""
    import signal

    guard = Guard()
    was = signal.getsignal(signal.SIGUSR1)
    monkeypatch.setattr(signal, "getsignal", lambda sig: signal.SIG_DFL)
    monkeypatch.setattr(signal, "getitimer", lambda which: (0.0, 0.0))
    signal.signal(signal.SIGUSR1, lambda *a: None)
    try:
        assert guard.hooks_changed() == ["a handler of SIGUSR1"]
    finally:
        signal.signal(signal.SIGUSR1, was)


def test_the_yardstick_pays_the_hooks_read_a_learners_call_pays():
    """Both sides of a timed round read and compare the hooks after their call, inside the
    window (an H200's experts graded 0.44 to 0.72 of themselves while only the learner's side
    did): a handler the yardstick's function leaves is taken off as a learner's would be."""
    import signal

    from gpulab.exercises.own_work import Watch

    was = signal.getsignal(signal.SIGUSR2)

    def ours():
        signal.signal(signal.SIGUSR2, lambda *a: None)

    try:
        Watch().ours(ours)()
        assert signal.getsignal(signal.SIGUSR2) is was
    finally:
        signal.signal(signal.SIGUSR2, was)


def test_the_yardstick_pays_the_speed_settings_read_a_learners_call_pays():
    """The speed settings (torch's thread count, the CPU affinity, cudnn's switches) are read
    and compared after every learner call, inside the window; the yardstick's wrapper does the
    same, so neither side pays a cost the other does not, and what its function changed is put
    back."""
    torch = pytest.importorskip("torch")
    from gpulab.exercises.own_work import Watch

    was = torch.get_num_threads()

    def ours():
        torch.set_num_threads(1 if was != 1 else 2)

    try:
        Watch().ours(ours)()
        assert torch.get_num_threads() == was
    finally:
        torch.set_num_threads(was)


def test_a_library_handler_that_chains_to_the_one_it_replaced_is_not_a_hook():
    """torch's DataLoader sets a SIGCHLD handler the first time it starts workers, which calls
    the handler it replaced: a correct solution feeding batches through a loader with workers
    was refused for it. A handler of the learner's that torch's then chains to still fails."""
    import signal

    from torch.utils.data._utils import signal_handling

    was = signal.getsignal(signal.SIGCHLD)
    try:
        guard = Guard()
        signal_handling._SIGCHLD_handler_set = False
        signal_handling._set_SIGCHLD_handler()
        assert guard.hooks_changed() == []
        assert signal.getsignal(signal.SIGCHLD) is not was  # torch's stays: it is the library's

        signal.signal(signal.SIGCHLD, was)
        guard = Guard()
        signal.signal(signal.SIGCHLD, lambda *a: None)  # the learner's, then torch's around it
        signal_handling._SIGCHLD_handler_set = False
        signal_handling._set_SIGCHLD_handler()
        assert guard.hooks_changed() == ["a handler of SIGCHLD"]
        assert signal.getsignal(signal.SIGCHLD) is was
    finally:
        signal.signal(signal.SIGCHLD, was)
        signal_handling._SIGCHLD_handler_set = False
