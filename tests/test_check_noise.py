"""bench/check_noise.py: the probe that found where low checks came from (host launch latency
inside a lone call's events), kept runnable: its summary and one small run on this machine."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _probe():
    spec = importlib.util.spec_from_file_location("check_noise", ROOT / "bench" / "check_noise.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_summary_counts_low_checks_and_whether_the_library_was_low_too():
    probe = _probe()
    rows = [{"fraction": 0.93, "library_fraction": 0.27} for _ in range(8)]
    rows.append({"fraction": 0.55, "library_fraction": 0.27})  # only the learner's calls slow
    rows.append({"fraction": 0.50, "library_fraction": 0.10})  # the whole GPU slow
    got = probe.summary(rows)
    assert got["median"] == 0.93 and got["min"] == 0.50
    assert got["low"] == 2 and got["low_with_library_low"] == 1
    assert got["low_fractions"] == [0.55, 0.5]
    assert probe.summary([{"fraction": None}])["low"] == 0


def test_a_small_inline_run_writes_its_conditions(tmp_path):
    probe = _probe()
    args = argparse.Namespace(
        exercise="vector-add", solution="reference", checks=2, conditions=["inline"]
    )
    out = asyncio.run(probe.main_async(args))
    (cond,) = out["conditions"]
    assert cond["condition"] == "inline" and len(cond["checks"]) == 2
    assert all(r["passed"] and r["fraction"] for r in cond["checks"])
    assert cond["median"] is not None and cond["low"] >= 0
