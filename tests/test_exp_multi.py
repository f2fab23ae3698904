"""The multi-GPU experiments on the CPU (gloo, 2 ranks): they run, verify and explain; p2p says
why it cannot run; GPU runs (NCCL) skip with the reason when fewer than 2 GPUs are visible."""

from __future__ import annotations

import itertools

import pytest
from headline_checks import assert_headline

from gpulab.experiments import allreduce
from gpulab.experiments.inline import run_job

pytest.importorskip("torch.distributed")


def run(exp_id, params, inventory, quick=True):
    events: list[dict] = []
    final = run_job("t", exp_id, params, inventory, events.append, quick=quick)
    return final, events


def test_sizes_split_evenly_and_busbw_factors_follow_nccl_tests():
    got = allreduce.sizes(2**30, 8)
    assert got[0] == 32 and got[-1] == 2**30  # 8 B rounds up to one fp32 per rank
    assert all(s % 32 == 0 for s in got)
    assert allreduce.bus_factor("all-reduce", 2) == 1.0
    assert allreduce.bus_factor("all-reduce", 8) == pytest.approx(1.75)
    assert allreduce.bus_factor("all-gather", 4) == pytest.approx(0.75)


def test_a_busbw_row_above_the_peer_copy_says_why():
    """A ring's busbw cannot pass the slowest link, but NVLS on NVSwitch can (about 480 GB/s on
    8 H100s against a link's 450): such a row keeps its honest % and names the reason."""
    row = {"op": "all-reduce", "bytes": 2**30, "time_s": 0.004, "iters": 5}
    row |= {"algbw_gbs": 274.0, "busbw_gbs": 480.0}
    above = allreduce.to_measurement(row, 8, 450.0)
    assert above.percent_of_peak > 100 and "NVLS" in above.extra["ceiling_note"]
    below = allreduce.to_measurement(row, 8, 500.0)
    assert below.percent_of_peak < 100 and "ceiling_note" not in below.extra
    assert "ceiling_note" not in allreduce.to_measurement(row, 8, None).extra


def test_allreduce_on_two_gloo_ranks_is_exact_and_has_a_busbw_series(cpu_inventory):
    final, events = run("allreduce", {"ranks": 2, "max_bytes": 4096}, cpu_inventory)
    assert final == "result", [e for e in events if e["type"] == "failed"]
    result = events[-1]["result"]
    assert {v["contender"] for v in result["verdicts"]} == set(allreduce.OPS)
    assert all(v["passed"] and v["error"] == 0.0 for v in result["verdicts"])
    series = {s["name"]: s for s in result["series"]}
    assert series["all-reduce busbw"]["x"] == [8.0, 64.0, 512.0, 4096.0]
    rows = [m for m in result["measurements"] if m["contender"] == "all-reduce"]
    for m in rows:  # at 2 ranks, all-reduce's busbw equals its algbw (2(n-1)/n = 1)
        assert m["throughput"] == pytest.approx(m["extra"]["algbw_gbs"])
        # real statistics: at least 20 timed iterations after a warm-up, median within min..max
        assert m["runs"] >= allreduce.MIN_ITERS
        assert m["time_min_s"] <= m["time_median_s"] <= m["time_max_s"]
        assert m["note"].startswith("the figure is busbw (algbw x 1);")
        assert f"median of {m['runs']} iterations" in m["note"]
    busbw = series["all-reduce busbw"]  # each point a median inside its interval
    assert _inside(busbw)
    assert "all-reduce busbw at 4.0 KiB" not in series  # one rank count: no plot against ranks
    fit = result["summary"]["ring_model"]
    model = series.get("all-reduce, ring model (alpha-beta)")
    if "unavailable" in fit:  # 8 B to 4 KiB over loopback is all latency: noise may hide B
        assert fit["unavailable"] == allreduce.NO_FIT and model is None
        assert "This run's fit" not in result["explanation"]
    else:
        assert model["model"] and model["x"] == busbw["x"]
        assert fit["alpha_us"] >= 0 and fit["bandwidth_gbs"] > 0 and "8 B" in fit["fitted_from"]
        assert "This run's fit: alpha = " in result["explanation"]
    _assert_latency_split_per_call_only(result)
    live = [e for e in events if e["type"] == "measurement"]
    assert len(live) == len(result["measurements"])  # rank 0's rows streamed as they finished
    assert result["summary"]["ranks"] == 2 and result["summary"]["backend"] == "gloo"
    assert_headline("allreduce", result)
    progress = [e.get("message", "") for e in events if e["type"] == "progress"]
    assert any("ranks 0:" in line for line in progress)
    assert all(a != b for a, b in itertools.pairwise(progress)), "a progress line repeated"


def _inside(series):
    """Every point of a series lies in its own interval."""
    bounds = zip(series["lo"], series["y"], series["hi"], strict=True)
    return all(lo <= y <= hi for lo, y, hi in bounds)


def _assert_latency_split_per_call_only(result):
    """gloo: a row per part of a 16 B all-reduce's time, and no graph, said plainly."""
    parts = {m["extra"]["part"]: m for m in result["measurements"] if "part" in m["extra"]}
    assert set(parts) == {"issue", "call and wait", "barrier"}
    for m in parts.values():
        lo, hi = m["extra"]["interval_s"]
        assert m["size"] == "16 B" and lo <= m["time_median_s"] <= hi and m["runs"] >= 20
    assert parts["issue"]["time_median_s"] < parts["call and wait"]["time_median_s"]
    assert "no CUDA graph" in result["unavailable"]["latency: in a CUDA graph"]
    split = result["summary"]["latency_s"]
    assert split["call and wait"] == parts["call and wait"]["time_median_s"]
    assert "collective alone" not in split and "no CUDA graph" in result["summary"]["latency"]
    assert "per call from Python" in result["headline"]


def test_allreduce_on_three_gloo_ranks_plots_busbw_against_ranks_beside_the_model(cpu_inventory):
    final, events = run("allreduce", {"ranks": 3, "max_bytes": 2048}, cpu_inventory)
    assert final == "result", [e for e in events if e["type"] == "failed"]
    result = events[-1]["result"]
    assert all(v["passed"] for v in result["verdicts"])
    series = {s["name"]: s for s in result["series"]}
    top = result["summary"]["largest_bytes"]
    measured = series[f"all-reduce busbw at {allreduce.result_rows.size_label(top)}"]
    assert measured["x"] == [2.0, 3.0] and measured["x_label"] == "ranks"
    assert _inside(measured)
    by_ranks = {int(k): v for k, v in result["summary"]["busbw_by_ranks_gbs"].items()}
    assert measured["y"] == [by_ranks[2], by_ranks[3]]
    predicted = [s for s in result["series"] if s["model"] and s["x_label"] == "ranks"]
    fitted = "unavailable" not in result["summary"]["ring_model"]
    assert [s["x"] for s in predicted] == ([[2.0, 3.0]] if fitted else [])
    # the 2-rank point is its own run: a row of its own, checked like the rest
    two = [m for m in result["measurements"] if m["size"].endswith(", 2 ranks")]
    assert len(two) == 1 and two[0]["extra"]["ranks"] == 2
    assert two[0]["throughput"] == pytest.approx(two[0]["extra"]["algbw_gbs"])
    _assert_latency_split_per_call_only(result)


def test_allreduce_refuses_one_rank_in_one_line(cpu_inventory):
    final, events = run("allreduce", {"ranks": 1}, cpu_inventory)
    assert final == "failed"
    assert "ranks=1" in events[-1]["message"] and "\n" not in events[-1]["message"]


def test_p2p_on_the_cpu_says_why_it_cannot_run(cpu_inventory):
    final, events = run("p2p", {}, cpu_inventory)
    assert final == "result"
    result = events[-1]["result"]
    assert set(result["unavailable"]) == {"peer", "via-host"}
    assert "two or more GPUs" in result["headline"]
    assert not result["measurements"]


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.parametrize("exp_id", ["allreduce", "p2p"])
def test_multi_gpu_experiments_on_nccl(exp_id):
    if _gpus() < 2:
        pytest.skip(f"needs 2 or more GPUs; {_gpus()} visible")
    from gpulab.core.devices import detect

    params = {"max_bytes": 2**26} if exp_id == "allreduce" else {"bytes": 2**24}
    # not quick: quick caps the sizes at 64 KiB, where NVLink is all latency and there is no
    # bandwidth to fit the ring model to (the result says so instead)
    final, events = run(exp_id, params, detect(), quick=False)
    assert final == "result", [e for e in events if e["type"] == "failed"]
    result = events[-1]["result"]
    assert all(v["passed"] for v in result["verdicts"])
    assert result["measurements"]
    if exp_id == "allreduce":
        assert result["summary"]["backend"] == "nccl"
        assert result["summary"]["peer_copy_gbs"] > 0
        assert result["summary"]["ring_model"]["bandwidth_of_peer"] > 0
        names = {s["name"] for s in result["series"]}
        assert "all-reduce, ring model (alpha-beta)" in names
        assert (_gpus() > 2) == any(s["x_label"] == "ranks" for s in result["series"])


@pytest.mark.gpu
def test_a_small_allreduce_splits_into_host_and_nccl_on_gpus():
    """On NCCL the 16 B all-reduce has every part, the graph's included: per collective with no
    host in the loop it is cheaper than a call the host waits for, and the split adds up."""
    if _gpus() < 2:
        pytest.skip(f"needs 2 or more GPUs; {_gpus()} visible")
    from gpulab.core.devices import detect

    final, events = run("allreduce", {"ranks": 2, "max_bytes": 2**20}, detect())
    assert final == "result", [e for e in events if e["type"] == "failed"]
    result = events[-1]["result"]
    parts = {m["extra"]["part"]: m for m in result["measurements"] if "part" in m["extra"]}
    assert set(parts) == {"issue", "call and wait", "event pair", "barrier", "in a CUDA graph"}
    assert "latency: in a CUDA graph" not in result["unavailable"]
    split = result["summary"]["latency_s"]
    graph = parts["in a CUDA graph"]["time_median_s"]
    assert 0 < graph < split["call and wait"]
    assert split["host adds"] == pytest.approx(split["call and wait"] - graph)
    assert "in a CUDA graph" in result["headline"]


def test_ddp_scaling_on_1_and_2_gloo_ranks_matches_loss_curves(cpu_inventory):
    final, events = run("ddp-scaling", {"max_ranks": 2}, cpu_inventory)
    assert final == "result", [e for e in events if e["type"] == "failed"]
    result = events[-1]["result"]
    assert result["summary"]["world_sizes"] == [1, 2]
    assert all(v["passed"] for v in result["verdicts"]), result["verdicts"]
    series = {s["name"]: s for s in result["series"]}
    one, two = series["loss, 1 ranks"]["y"], series["loss, 2 ranks"]["y"]
    assert len(one) == len(two) == 4 and one != [one[0]] * 4  # the loss moves
    rate, perfect = series["samples/s"], series["perfect scaling (n x 1 rank)"]
    assert rate["x"] == perfect["x"] == [1.0, 2.0] and perfect["model"] and _inside(rate)
    assert rate["y"][0] == pytest.approx(perfect["y"][0])  # one rank is its own yardstick
    assert perfect["y"][1] == pytest.approx(2 * perfect["y"][0])
    rows = result["measurements"]
    assert rows[0]["extra"]["efficiency"] == pytest.approx(1.0)
    assert rows[1]["extra"]["buckets_per_step"] >= 1  # the hook saw DDP's all-reduces
    assert rows[1]["extra"]["allreduce_s"] > 0 and rows[0]["extra"]["compute_s"] > 0
    for m in rows:  # each step timed on its own: a median between its min and max
        assert m["time_min_s"] <= m["time_median_s"] <= m["time_max_s"]
    assert_headline("ddp-scaling", result)
