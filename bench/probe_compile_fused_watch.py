"""compile-fused: where the check's own cost per call goes. Inside the check on an H200 (3059e33's
bench) our compiled chain took 0.489 ms a call and eager 0.778 ms, where bare they take about
0.15 and 0.67 ms, and right/scale-outside-the-graph.py (four 1-element eager ops before the
compiled call) took 0.721 ms: 20% of our saving, a false rejection. This times ours, that file
and the eager chain at n = 2**25 under the check's pieces added one at a time:

  bare; + veil (the profiler's predicates answer "off" to the learner); + refuse.one_thread
  (thread, process and DLPack patches around the rounds); + Watch installed, the learner's
  function through watch.call (timing mode) and ours and eager through watch.ours; + the
  Refresher rewriting x before every call (outside the clock, as the check's _time does).

Each row is the median of 60 calls, host clock around the call and a synchronize, as the check
times. On a machine without a GPU it runs on the CPU at n = 2**20 (a smoke test: the figures
there say nothing about a GPU host).
Usage: python3 bench/probe_compile_fused_watch.py [--json PATH] [--log2n 27] (the check's
larger input where memory allows: the same host work beside kernels 4x longer)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from gpulab.exercises import refuse, veil
from gpulab.exercises.frames import LEARNER
from gpulab.exercises.fresh import Refresher
from gpulab.exercises.own_work import Watch

CAT = Path(__file__).resolve().parents[1] / "gpulab/exercises/catalog/15-compile-fused"
CALLS = 60


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # the veil reads a learner's frames by their module's name
    spec.loader.exec_module(mod)
    return mod.run


def _eager(x, w):
    y = (x * w + 0.5) / ((x[:1] * w[:1] + 0.5).abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


def _median_ms(f, x, w, gpu: bool, fresh=None) -> float:
    for _ in range(5):
        f(x, w)
    each = []
    for _ in range(CALLS):
        if fresh is not None:
            fresh(x)
        if gpu:
            torch.cuda.synchronize()
        t = time.perf_counter()
        f(x, w)
        if gpu:
            torch.cuda.synchronize()
        each.append(time.perf_counter() - t)
    return statistics.median(each) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--log2n", type=int, default=0, help="the input's length, 2**LOG2N")
    args = ap.parse_args()
    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    n = 1 << (args.log2n or (25 if gpu else 20))
    g = torch.Generator(device=device)
    g.manual_seed(7)
    x = torch.rand(n, generator=g, device=device).mul_(6.0).sub_(3.0)
    w = torch.rand(n, generator=g, device=device).mul_(1.5).add_(0.5)
    ours = _load(CAT / "solution.py", "gpulab_probe_ours")
    right = _load(CAT / "right/scale-outside-the-graph.py", f"{LEARNER}_probe_right")
    rows: list[dict[str, object]] = []
    watch = Watch()
    fresh = None

    def row(stage: str, mine, yours, eager) -> None:
        got = {
            "stage": stage,
            "ours_ms": _median_ms(mine, x, w, gpu, fresh),
            "right_ms": _median_ms(yours, x, w, gpu, fresh),
            "eager_ms": _median_ms(eager, x, w, gpu, fresh),
        }
        saved = got["eager_ms"] - got["ours_ms"]
        got["share"] = (got["eager_ms"] - got["right_ms"]) / saved if saved > 0 else 0.0
        rows.append(got)
        print(
            f"{stage:28s} ours {got['ours_ms']:.3f}  right/ {got['right_ms']:.3f}  "
            f"eager {got['eager_ms']:.3f} ms  share {got['share']:.0%}",
            flush=True,
        )

    row("bare", ours, right, _eager)
    veil.install()
    row("+ veil", ours, right, _eager)
    with contextlib.ExitStack() as stack:
        stack.enter_context(refuse.one_thread([], exits=True, exempt=("torch", "triton")))
        row("+ one_thread", ours, right, _eager)
        watch.install()
        stack.callback(watch.uninstall)
        watch.timing = True
        row("+ watch", watch.ours(ours), watch.call(right), watch.ours(_eager))
        fresh = Refresher()
        row("+ fresh x before each", watch.ours(ours), watch.call(right), watch.ours(_eager))
    doc = {"device": torch.cuda.get_device_name() if gpu else "cpu", "n": n, "rows": rows}
    doc["torch"] = torch.__version__
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
