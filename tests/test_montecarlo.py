"""Monte Carlo pi: CPU contenders in CI; the fused kernel bit-exact against its NumPy twin on a GPU."""

from __future__ import annotations

import math

import pytest
from headline_checks import assert_headline

from gpulab.core.devices import Inventory, detect
from gpulab.experiments import montecarlo as mc
from gpulab.experiments import montecarlo_counts as counts
from gpulab.experiments.base import Context


def _run(samples: int, seed: int = 0, inventory: Inventory | None = None):
    exp = mc.EXPERIMENT
    ctx = Context(inventory=inventory or detect(), quick=True)
    return exp.run(ctx, exp.params.validate({"samples": samples, "seed": seed}))


def test_cpu_contenders_estimate_pi_within_tolerance():
    res = _run(200_000, seed=3)
    ran = {m.contender for m in res.measurements}
    assert {"numpy", "torch-cpu"} <= ran
    assert res.passed
    for m in res.measurements:
        assert abs(m.extra["estimate"] - math.pi) <= mc.SE_PASS * m.extra["standard_error"]
        assert m.throughput and m.throughput > 0
        assert m.cold_s is not None
    assert res.series and res.series[0].log_x and res.series[0].log_y
    assert_headline("montecarlo", res.to_dict())


def test_unavailable_gpu_contenders_say_why():
    res = _run(10_000, inventory=Inventory())
    assert "cupy-fused" in res.unavailable
    assert "torch" in res.unavailable
    assert {m.contender for m in res.measurements} == {"numpy"}


def test_cpu_contenders_are_capped_and_say_so(monkeypatch):
    monkeypatch.setattr(mc, "CPU_CAP", 50_000)
    res = _run(1_000_000)
    for m in res.measurements:
        if m.contender in ("numpy", "torch-cpu"):
            assert m.extra["samples_run"] == 50_000
            assert "capped" in m.note


def test_summary_error_is_of_the_samples_actually_run(monkeypatch):
    # 1e12 asked for on the CPU: the contender ran CPU_CAP (patched small to stay fast).
    monkeypatch.setattr(mc, "CPU_CAP", 1_000_000)
    res = _run(1_000_000_000_000, seed=5, inventory=Inventory())
    s = res.summary
    assert s["samples"] == 1e12 and s["samples_run"] == 1_000_000
    assert s["estimate_by"] == "numpy"
    assert s["standard_error"] == pytest.approx(mc.standard_error(1_000_000))
    assert abs(s["estimate"] - math.pi) <= mc.SE_PASS * s["standard_error"]
    # Not the requested count's error, a million times smaller than the run's scatter.
    assert s["standard_error"] > 500 * mc.standard_error(10**12)


def test_rows_say_there_is_no_calibrated_ceiling():
    from gpulab.render.results import render_result

    res = _run(20_000, inventory=Inventory())
    for m in res.measurements:
        assert m.percent_of_peak is None
        assert m.peak_name == mc.NO_CEILING
    assert "samples per second" in res.explanation and "no calibrated ceiling" in res.explanation
    out = render_result(res.to_dict())
    row = next(line for line in out.splitlines() if line.startswith("numpy "))
    assert " n/a " in row  # the CLI table says so too, instead of a silent "-"


def test_a_wrong_count_fails_the_verdict(monkeypatch):
    monkeypatch.setattr(mc, "_numpy_count", lambda n, s, *check: int(n * 0.7))  # pi ~ 2.8
    res = _run(100_000, inventory=Inventory())
    assert not res.passed


def test_splitmix_reference_is_a_good_generator():
    # The kernel's RNG, reproduced in NumPy: unbiased over several seeds.
    n = 400_000
    zs = []
    for seed in range(5):
        est = 4.0 * counts.splitmix_count_numpy(n, seed) / n
        zs.append((est - math.pi) / mc.standard_error(n))
    assert all(abs(z) < mc.SE_PASS for z in zs)
    assert abs(sum(zs) / math.sqrt(len(zs))) < mc.SE_PASS
    assert len({round(z, 9) for z in zs}) == len(zs)  # seeds give different streams


def test_samples_limits_are_params():
    from gpulab.core.params import ParamError

    with pytest.raises(ParamError):
        mc.EXPERIMENT.params.validate({"samples": 2e12})


@pytest.mark.gpu
@pytest.mark.alone
def test_fused_kernel_matches_numpy_twin_bit_for_bit():
    pytest.importorskip("cupy")
    k = counts.FusedKernel(0)
    for n, seed in ((1000, 1), (999_983, 7), (3_000_001, 11)):
        assert k.count(n, seed) == counts.splitmix_count_numpy(n, seed)
    # Compiled and loaded once per device, inside that device's context.
    assert counts.FusedKernel(0).fn is k.fn and 0 in counts.FusedKernel._fns


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_contenders_pass_and_fused_memory_is_flat():
    from gpulab.experiments import montecarlo_torch as mct

    res = _run(mct.GPU_CHUNK_MAX + 1000)
    rows = {m.contender: m for m in res.measurements}
    assert res.passed
    assert res.summary["estimate_by"] in ("cupy-fused", "torch")
    assert_headline("montecarlo", res.to_dict())
    assert "torch" in rows
    if "cupy-fused" in rows:
        assert rows["cupy-fused"].extra["device_bytes"] <= 1024
    big = _run(4 * mct.GPU_CHUNK_MAX)
    rows_big = {m.contender: m for m in big.measurements}
    # The torch contender chunks: memory stops growing once a chunk is full.
    assert rows_big["torch"].extra["device_bytes"] <= rows["torch"].extra["device_bytes"] * 1.1
    # Its buffers: x, y and a mask of one chunk, and nothing else of size.
    chunk_bytes = mct.GPU_CHUNK_MAX * mct.BYTES_PER_POINT
    assert rows_big["torch"].extra["device_bytes"] <= chunk_bytes * 1.05 + 2**20


@pytest.mark.gpu
@pytest.mark.alone
def test_torch_counter_counts_exactly_on_the_gpu():
    # Blocks of 2^24 summed in float32 on the device: the count equals an int64 count of the
    # same points (a plain float32 sum of 40M ones would not be exact).
    import torch

    from gpulab.experiments import montecarlo_torch as mct

    n = 2 * mct.EXACT_BLOCK + 7_000_001
    counter = mct.TorchCounter("cuda:0", n)
    got = counter.count(n, 42)
    gen = torch.Generator(device="cuda:0").manual_seed(42)
    x = torch.rand(n, device="cuda:0", generator=gen)
    y = torch.rand(n, device="cuda:0", generator=gen)
    x.mul_(x).addcmul_(y, y)
    assert got == int((x <= 1.0).sum().item())


@pytest.mark.gpu
@pytest.mark.alone
def test_torch_contender_keeps_up_with_the_recipe():
    # The bench's target (within 5% of the tutorials' recipe, warm, same run), quick here.
    from gpulab.experiments import montecarlo_torch as mct

    cmp = mct.torch_vs_recipe(100_000_000, rounds=2, quick=True)
    assert cmp["status"] in ("pass", "miss") and cmp["ours_gs"] > 0 and cmp["recipe_gs"] > 0
    assert cmp["ratio"] >= 0.9, cmp  # a looser bound than the bench's, for a short run


def test_capped_rows_report_the_samples_that_ran(monkeypatch):
    monkeypatch.setattr(mc, "CPU_CAP", 50_000)
    res = _run(1_000_000, inventory=Inventory())
    m = next(m for m in res.measurements if m.contender == "numpy")
    assert m.size == "50000 of 1e+06"  # what ran, and what was asked, in the table itself
    assert m.extra["capped"] is True and m.extra["samples_requested"] == 1_000_000
    assert m.throughput == pytest.approx(50_000 / m.time_median_s / 1e9)
    v = next(v for v in res.verdicts if v.contender == "numpy")
    assert v.size == m.size  # the table finds the row's verdict
    uncapped = _run(20_000, inventory=Inventory())
    row = uncapped.measurements[0]
    assert row.size == "20000" and row.extra["capped"] is False and "capped" not in row.note


def test_torch_counter_chunks_add_up_exactly(monkeypatch):
    # The chunked, in-place contender counts exactly what the recipe computes chunk by chunk.
    import torch

    from gpulab.experiments import montecarlo_torch as mct

    monkeypatch.setattr(mct, "GPU_CHUNK_MAX", 1000)
    monkeypatch.setattr(mct, "EXACT_BLOCK", 300)  # whole blocks and a tail in every chunk
    counter = mct.TorchCounter("cpu", 2500)
    assert counter.chunk == 1000
    gen = torch.Generator().manual_seed(9)
    want = 0
    for n in (1000, 1000, 500):
        x, y = torch.rand(n, generator=gen), torch.rand(n, generator=gen)
        want += int((x * x + y * y <= 1.0).sum())
    assert counter.count(2500, 9) == want
    assert counter.count(2500, 9) == want  # the buffers are reused: the same answer again
    assert counter.nbytes < 2 * 1000 * 4 + 64  # x and y of one chunk, no mask, no temporaries
    checks = []
    assert counter.count(2500, 9, lambda: checks.append(1)) == want
    assert len(checks) == 3  # a cancel check before every chunk


def test_counting_ones_goes_by_exact_blocks(monkeypatch):
    import torch

    from gpulab.experiments import montecarlo_torch as mct

    monkeypatch.setattr(mct, "EXACT_BLOCK", 64)
    counter = mct.TorchCounter("cpu", 10)
    for n, ones in ((64 * 5 + 17, 200), (128, 128), (30, 3)):
        x = torch.zeros(n)
        x[torch.randperm(n)[:ones]] = 1.0
        counter.total.zero_()
        counter._add_ones(x)
        assert int(counter.total) == ones and counter.total.dtype == torch.int64


def test_gpu_chunk_is_bounded_by_the_run_and_free_memory():
    from gpulab.experiments import montecarlo_torch as mct

    assert mct.gpu_chunk(10**8, None) == 10**8  # one chunk, like the recipe
    assert mct.gpu_chunk(10**11, None) == mct.GPU_CHUNK_MAX
    assert mct.gpu_chunk(10**11, 80 * 2**30) == mct.GPU_CHUNK_MAX
    small = mct.gpu_chunk(10**11, 400 * 2**20)  # 400 MiB free: a quarter holds ~11M points
    assert small == 400 * 2**20 // 4 // mct.BYTES_PER_POINT
    assert mct.gpu_chunk(10**11, 1000) == 1 << 20  # never below 1M points


def test_torch_generate_only_writes_random_numbers_or_a_fill():
    from gpulab.experiments import montecarlo_torch as mct

    counter = mct.TorchCounter("cpu", 10_000)
    counter.generate_only(10_000, 3)
    first = counter.x.clone()
    assert float(first.min()) >= 0.0 and float(first.max()) < 1.0 and first.std() > 0.2
    counter.generate_only(10_000, 3)
    assert bool((counter.x == first).all())  # seeded: the same numbers again
    counter.generate_only(10_000, 3, rng=False)
    assert bool((counter.x == 0.5).all()) and bool((counter.y == 0.5).all())
    text = mct.rng_text({"torch_rand_share": 0.6, "torch_fill_share": 0.45})
    assert "60% of it" in text and "45%" in text and "about 15% is the cost" in text


@pytest.mark.gpu
@pytest.mark.alone
def test_gpu_torch_row_is_split_into_its_rng_and_its_writes():
    res = _run(100_000_000)
    rows = {m.contender: m for m in res.measurements}
    rand, fill, whole = rows["torch-rand-only"], rows["torch-fill-only"], rows["torch"]
    # Parts of the torch row: each faster than the whole, the fill no slower than the RNG.
    assert fill.time_median_s <= rand.time_median_s * 1.05
    assert rand.time_median_s <= whole.time_median_s * 1.05
    s = res.summary
    assert 0 < s["torch_fill_share"] <= s["torch_rand_share"] * 1.05 <= 1.1
    assert "Philox" in res.explanation
