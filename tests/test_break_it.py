"""break-it in this process (runner/inline.py): each mode fails the way it says, and explains."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from gpulab.core import events as ev
from gpulab.core.devices import Inventory, detect
from gpulab.core.params import ParamError
from gpulab.experiments.break_it import EXPLAIN, MODES
from gpulab.experiments.inline import run_job
from gpulab.experiments.registry import get


@pytest.fixture(scope="module")
def cpu_inventory() -> Inventory:
    inv = detect()
    if inv.has_gpu:
        pytest.skip("these tests check the CPU paths")
    return inv


def run(mode: str, inv: Inventory, **params: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    run_job("t", "break-it", {"mode": mode, **params}, inv, events.append, quick=True)
    return events


def test_registered_with_the_debugging_lesson():
    exp = get("break-it")
    assert exp.lesson == "debugging"
    assert exp.params.get("mode").choices == MODES
    assert exp.params.validate({"mode": "oom"})["cap_mib"] == 512
    with pytest.raises(ParamError, match="mode"):
        exp.params.validate({"mode": "melt"})


def test_every_mode_has_an_explanation():
    for mode in MODES:
        keys = [k for k in EXPLAIN if k == mode or k.startswith(mode + "-")]
        assert keys, mode
        for key in keys:
            assert len(EXPLAIN[key]) > 200, key
            # A hang's way out is cancelling; every other failure says how to fix it.
            assert ("cancel" in EXPLAIN[key].lower()) if "hang" in key else "Fix" in EXPLAIN[key]


def test_device_mismatch_on_the_cpu_uses_the_meta_device(cpu_inventory):
    end = run("device-mismatch", cpu_inventory)[-1]
    assert end["kind"] == ev.KIND_DEVICE_MISMATCH
    assert end["devices"] == ["meta", "cpu"]
    assert "not on the expected device" in end["message"]
    assert "meta" in end["explanation"]


def test_oom_against_the_cap_reports_requested_and_free(cpu_inventory):
    events = run("oom", cpu_inventory, cap_mib=512)
    end = events[-1]
    assert end["kind"] == ev.KIND_OOM
    # 64 MiB blocks while two more still fit: 7 held (448 MiB), 128 MiB asked, 64 MiB free
    assert end["requested_bytes"] == 128 * 2**20
    assert end["free_bytes"] == 64 * 2**20
    assert "asked for 128 MiB with 64 MiB free" in end["message"]
    held = [e for e in events if e["type"] == ev.PROGRESS]
    assert len(held) == 7


def test_hang_stops_at_the_cooperative_flag(cpu_inventory):
    flag = threading.Event()
    events: list[dict[str, Any]] = []
    t = threading.Thread(
        target=run_job,
        args=("t", "break-it", {"mode": "hang"}, cpu_inventory, events.append),
        kwargs={"is_cancelled": flag.is_set},
    )
    t.start()
    try:
        deadline = threading.Event()
        for _ in range(500):
            if any(e["type"] == ev.PROGRESS for e in events):
                break
            deadline.wait(0.01)
        flag.set()
        t.join(1.0)
        assert not t.is_alive()
        assert events[-1]["type"] == ev.CANCELLED
    finally:
        flag.set()
        t.join(5)


def test_illegal_address_without_a_gpu_says_why(cpu_inventory):
    events = run("illegal-address", cpu_inventory)
    assert [e["type"] for e in events] == [ev.FAILED]  # refused before it starts
    assert events[0]["kind"] == ev.KIND_EXPERIMENT
    assert "needs an NVIDIA GPU with CuPy" in events[0]["message"]


def test_runaway_kernel_without_cupy_says_why(cpu_inventory):
    events = run("runaway-kernel", cpu_inventory)
    assert [e["type"] for e in events] == [ev.FAILED]  # refused before it starts
    assert events[0]["kind"] == ev.KIND_EXPERIMENT
    assert "runaway-kernel needs an NVIDIA GPU with CuPy" in events[0]["message"]


def test_runaway_kernel_is_bounded_on_the_device_clock():
    from gpulab.experiments.break_it import RUNAWAY, SPIN_CAP_S

    exp = get("break-it")
    assert exp.params.validate({"mode": "runaway-kernel"})["spin_s"] == SPIN_CAP_S <= 60
    with pytest.raises(ParamError, match="spin_s"):
        exp.params.validate({"mode": "runaway-kernel", "spin_s": SPIN_CAP_S + 1})
    assert "%%globaltimer" in RUNAWAY and "while (now - start < spin_ns)" in RUNAWAY
