"""The SM count the fixed-grid rules read (grid-stride, deterministic-sum) is the driver's.

CuPy hands out one `Device().attributes` dict per device, again at every read: a learner's
file that wrote a larger `MultiProcessorCount` into it at import raised grid-stride's limit on
an H200 (its `wrong/sm-count-raised.py` passed the bench at 3059e33). `sm_count()` asks
`cupy.cuda.runtime.deviceGetAttribute`, and the Guard puts back a rebinding of that module.
"""

from __future__ import annotations

import sys
import types

import pytest

from gpulab.exercises import kernel_checks as kc
from gpulab.exercises.sandbox import Guard


def _cupy_keeping_one_dict(sms: int) -> types.ModuleType:
    kept = {"MultiProcessorCount": sms}
    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        Device=lambda index=0: types.SimpleNamespace(attributes=kept),
        runtime=types.SimpleNamespace(
            getDevice=lambda: 0,
            deviceGetAttribute=lambda attribute, device: sms if attribute == 16 else -1,
        ),
    )
    return cp


def test_a_count_written_into_the_attributes_dict_is_not_read(monkeypatch):
    cp = _cupy_keeping_one_dict(132)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    cp.cuda.Device().attributes["MultiProcessorCount"] = 1 << 20  # the shortcut's write
    assert cp.cuda.Device().attributes["MultiProcessorCount"] == 1 << 20  # as CuPy keeps it
    assert kc.sm_count() == 132


def test_the_guard_puts_back_a_rebound_runtime_function(monkeypatch):
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.deviceGetAttribute = lambda attribute, device: 132  # type: ignore[attr-defined]
    real = runtime.deviceGetAttribute  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy.cuda.runtime", runtime)
    guard = Guard()
    runtime.deviceGetAttribute = lambda attribute, device: 1 << 20  # type: ignore[attr-defined]
    changed = guard.restore()
    assert runtime.deviceGetAttribute is real  # type: ignore[attr-defined]
    assert any("deviceGetAttribute" in name for name in changed)


@pytest.mark.gpu
def test_on_the_gpu_the_written_dict_leaves_the_count_alone():
    cp = pytest.importorskip("cupy")
    if not cp.cuda.is_available():
        pytest.skip("no CUDA device")
    attributes = cp.cuda.Device().attributes
    true = kc.sm_count()
    before = attributes.get("MultiProcessorCount")
    try:
        attributes["MultiProcessorCount"] = 1 << 20
        assert kc.sm_count() == true
        import torch

        if torch.cuda.is_available():
            assert true == torch.cuda.get_device_properties(0).multi_processor_count
    finally:
        attributes["MultiProcessorCount"] = before


def test_the_guard_puts_back_a_count_written_into_cupys_kept_dict(monkeypatch):
    """Our expert sizes its grid from `Device().attributes`: a count left in CuPy's kept dict
    by one check would give the next check in the worker a grid the rule refuses."""
    cp = _cupy_keeping_one_dict(132)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    guard = Guard()
    cp.cuda.Device().attributes["MultiProcessorCount"] = 1 << 20
    cp.cuda.Device().attributes["Spare"] = 1
    changed = guard.restore()
    assert cp.cuda.Device().attributes == {"MultiProcessorCount": 132}
    assert "cupy.cuda.Device().attributes" in changed
