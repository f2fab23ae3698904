"""Monte Carlo's torch contender on the GPU, and the tutorials' recipe it must keep up with.

The recipe (two `torch.rand` arrays, `x*x + y*y <= 1`, mean, times 4) holds every sample in
memory at once, several arrays of them: 1e9 samples take ~20 GB. The contender does the same
arithmetic in chunks, so its memory is flat in the sample count, and chunking must cost no
speed (the first chunked version ran 13-17% behind the recipe). So it:
- uses chunks of up to GPU_CHUNK_MAX points (within a quarter of the free memory): a 1e8 run is
  one chunk, like the recipe, and launches are a negligible share of a chunk's time;
- allocates its buffers once per run and fills them in place (`torch.rand(out=)`, `mul_`,
  `addcmul_`, `le_`): no temporaries;
- counts without a bool mask: summing a bool tensor makes torch copy it to int64 first (a
  reduction's input is cast to its output dtype), 17 bytes of traffic a sample, which is most
  of why the first chunked version was slower than the recipe (58 bytes a sample against the
  recipe's ~50). Here the compare writes 1.0 / 0.0 in place and float32 sums count them, one
  block of 2^24 at a time: every partial sum is an integer up to 2^24, exact in float32. About
  40 bytes a sample in all;
- keeps the count on the device (int64) and synchronizes once, at the end.

`torch_vs_recipe` is the bench's same-run comparison of the two, interleaved rounds, warm.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from gpulab.core.timing import Timer
from gpulab.experiments.result_rows import row

GPU_CHUNK_MAX = 1 << 27  # 128M points: x and y 512 MiB each
BYTES_PER_POINT = 8  # x and y in fp32
EXACT_BLOCK = 1 << 24  # float32 holds every integer up to 2^24: a block's count is exact
MEMORY_SHARE = 0.25  # of the free device memory, at most, for the buffers


def gpu_chunk(samples: int, free_bytes: int | None) -> int:
    """Points per chunk: the whole run when it is small, else GPU_CHUNK_MAX, less when a quarter
    of the free memory cannot hold the buffers (never under 1M points)."""
    chunk = GPU_CHUNK_MAX
    if free_bytes is not None:
        chunk = min(chunk, max(1 << 20, int(free_bytes * MEMORY_SHARE) // BYTES_PER_POINT))
    return max(1, min(samples, chunk))


class TorchCounter:
    """Points inside the quarter circle, the recipe's arithmetic on reused chunk buffers."""

    def __init__(self, device: str, samples: int) -> None:
        import torch

        self.torch = torch
        free = None
        if torch.device(device).type == "cuda":
            free, _ = torch.cuda.mem_get_info(torch.device(device))
        chunk = gpu_chunk(samples, free)
        self.x = torch.empty(chunk, device=device)
        self.y = torch.empty(chunk, device=device)
        self.total = torch.zeros((), dtype=torch.int64, device=device)
        self.gen = torch.Generator(device=device)

    @property
    def chunk(self) -> int:
        """Points per chunk."""
        return int(self.x.numel())

    @property
    def nbytes(self) -> int:
        """Bytes the counter's buffers take."""
        return int(self.x.nbytes + self.y.nbytes + self.total.nbytes)

    def count(self, samples: int, seed: int, check: Callable[[], None] | None = None) -> int:
        """Points inside of `samples`; `check` (a cancel check) runs before every chunk."""
        torch = self.torch
        self.gen.manual_seed(seed)
        self.total.zero_()
        chunk = self.chunk
        for start in range(0, samples, chunk):
            if check is not None:
                check()
            n = min(chunk, samples - start)
            x, y = self.x[:n], self.y[:n]
            torch.rand(n, out=x, generator=self.gen)
            torch.rand(n, out=y, generator=self.gen)
            x.mul_(x).addcmul_(y, y).le_(1.0)  # x*x + y*y <= 1, as 1.0 / 0.0, no temporary
            self._add_ones(x)
        return int(self.total.item())  # the one synchronization

    def generate_only(self, samples: int, seed: int, *, rng: bool = True) -> None:
        """Only the writes of x and y, chunk by chunk: torch.rand's Philox numbers (rng) or a
        plain fill of the same bytes (no rng). Timed against `count`, they split the torch
        row's time into the random numbers, the memory they are written to, and the rest."""
        self.gen.manual_seed(seed)
        chunk = self.chunk
        for start in range(0, samples, chunk):
            n = min(chunk, samples - start)
            x, y = self.x[:n], self.y[:n]
            if rng:
                self.torch.rand(n, out=x, generator=self.gen)
                self.torch.rand(n, out=y, generator=self.gen)
            else:
                x.fill_(0.5)
                y.fill_(0.5)

    def _add_ones(self, ones: Any) -> None:
        """Add the count of 1.0s in `ones` (1.0 / 0.0) to the total, exactly: float32 sums of
        blocks of EXACT_BLOCK, then the few block counts as int64."""
        n = int(ones.numel())
        full = n - n % EXACT_BLOCK
        if full:
            blocks = ones[:full].view(-1, EXACT_BLOCK).sum(dim=1)
            self.total += blocks.to(self.total.dtype).sum()
        if full < n:
            self.total += ones[full:].sum().to(self.total.dtype)


RNG_ROWS = {
    "torch-rand-only": ("torch.rand for x and y alone (Philox numbers written to memory)", True),
    "torch-fill-only": ("x.fill_ and y.fill_ alone (the same bytes, no random numbers)", False),
}


def rng_rows(ctx: Any, counter: TorchCounter, samples: int, seed: int) -> list[Any]:
    """Rows that isolate the torch contender's random-number cost: its two torch.rand writes
    alone, and a plain fill of the same bytes. The fused kernel uses a cheaper generator than
    torch's Philox, so the lesson must not put the whole gap on memory traffic."""
    out = []
    for cid, (what, rng) in RNG_ROWS.items():
        ctx.progress(0.5, f"torch: {what}")
        timing = ctx.timer.measure(
            lambda rng=rng: counter.generate_only(samples, seed, rng=rng), sync="torch"
        )
        out.append(
            row(
                cid,
                f"{samples:g}",
                timing,
                work=samples,
                unit="G samples/s",
                scale=1e9,
                note=what,
                part_of="torch",
                peak_name="no calibrated ceiling: a part of the torch row",
            )
        )
    return out


def rng_text(summary: dict[str, Any]) -> str:
    """What the torch row's parts say about where its time goes."""
    rand, fill = summary["torch_rand_share"], summary["torch_fill_share"]
    return (
        f"Where the torch row's time goes: writing x and y with torch.rand alone took "
        f"{100 * rand:.0f}% of it, a plain fill of the same bytes {100 * fill:.0f}%. So about "
        f"{100 * max(0.0, rand - fill):.0f}% is the cost of making Philox random numbers beyond "
        "writing them, and the rest is memory traffic and the compare and count. The fused "
        "kernel also uses a cheaper generator (SplitMix64, one multiply-xorshift chain per "
        "sample, against Philox's ten rounds), so its lead is part memory traffic, part RNG."
    )


def recipe_estimate(samples: int, device: str) -> float:
    """The tutorials' recipe, exactly: every sample in memory at once."""
    import torch

    x = torch.rand(samples, device=device)
    y = torch.rand(samples, device=device)
    return float(((x * x + y * y <= 1.0).float().mean() * 4).item())


def recipe_fits(samples: int, device: str) -> bool:
    """Whether the recipe's arrays (x, y, x*x, y*y, their sum, the mask and its float copy:
    ~25 bytes a sample) fit in 90% of the free device memory."""
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return 25 * samples < 0.9 * free


def torch_vs_recipe(
    samples: int,
    device: str = "cuda:0",
    *,
    rounds: int = 3,
    quick: bool = False,
    seed: int = 1,
) -> dict[str, Any]:
    """Our contender's G samples/s over the recipe's, both warm, in interleaved rounds (a GPU's
    clocks drift: each round times both in the same conditions); ratio of the medians."""
    import torch

    name = f"montecarlo: torch contender / tutorials' recipe (warm), {samples:.0e} samples"
    base = {"name": name, "target": ">= 0.95", "samples": samples}
    if not recipe_fits(samples, device):
        return {**base, "status": "not run", "reason": "the recipe's arrays do not fit"}
    timer = Timer(warmup=2, repeats=5 if quick else 20, budget_s=0.2 if quick else 1.0)
    held = {"counter": TorchCounter(device, samples)}
    chunk = held["counter"].chunk
    calls = {"n": 0}

    def ours() -> None:
        calls["n"] += 1
        held["counter"].count(samples, seed + calls["n"])

    def recipe() -> None:
        recipe_estimate(samples, device)

    mine: list[float] = []
    theirs: list[float] = []
    with torch.cuda.device(torch.device(device)):
        for _ in range(max(1, rounds)):
            mine.append(samples / timer.measure(ours, sync="torch").median_s / 1e9)
            theirs.append(samples / timer.measure(recipe, sync="torch").median_s / 1e9)
    held.clear()  # the buffers go before the cache is emptied
    torch.cuda.empty_cache()
    g, r = statistics.median(mine), statistics.median(theirs)
    ratio = g / r
    return {
        **base,
        "value": ratio,
        "goal": 0.95,
        "ratio": ratio,
        "status": "pass" if ratio >= 0.95 else "miss",
        "ours_gs": g,
        "recipe_gs": r,
        "chunk": chunk,
        "rounds": [{"ours_gs": a, "recipe_gs": b} for a, b in zip(mine, theirs, strict=True)],
        "method": (
            f"{rounds} interleaved rounds of [our torch contender (TorchCounter, chunks of "
            f"{chunk:,} points); the recipe: two torch.rand arrays of {samples:,}, "
            "(x*x + y*y <= 1).float().mean() * 4], each warm (after 2 untimed calls), timed "
            "with CUDA events, .item() included in both; ratio of the median G samples/s"
        ),
    }
