"""CUDA graphs: a launch-bound step (many tiny kernels) run eagerly vs replayed from a graph.

The step is `layers` rounds of x = x + 0.1 * tanh(x * a + b) on a small tensor: four kernels a
round,
each a few microseconds of GPU work, so eager PyTorch is limited by launching them (Python, the
dispatcher, the driver). The same step is captured once into a torch.cuda.CUDAGraph on a static
input; a replay is one launch for all of them. Timed with the experiment's Timer (CUDA events
around `repeat` steps in a row, so the GPU's idle time waiting for launches is inside the
figure): eager, graph replay (copy the input in, replay), and the replay alone. The launch
overhead saved per kernel is (eager - replay) / kernels. Outputs are checked against eager.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.devices import Inventory
from gpulab.core.memory import device_queries_paused
from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result, Verdict
from gpulab.experiments import fits, result_rows
from gpulab.experiments.base import Contender, Context, Experiment, ExperimentError
from gpulab.experiments.result_rows import row

KERNELS_PER_LAYER = 4  # x * a, + b, tanh, the add: one kernel each in eager PyTorch
REPEAT = 20  # steps per timed call


def coefficients(layers: int) -> list[tuple[float, float]]:
    """Fixed (a, b) per layer that keep x in tanh's working range."""
    return [(0.9 + 0.2 * ((i * 7) % 5) / 4, 0.1 * ((i % 3) - 1)) for i in range(layers)]


def saved_per_kernel_us(eager_s: float, graph_s: float, kernels: int) -> float:
    """Launch overhead a replay saved, per kernel, in microseconds (per step times in)."""
    return (eager_s - graph_s) / kernels * 1e6


class CudaGraphs(Experiment):
    id = "cuda-graphs"
    title = "CUDA graphs: launch overhead"
    summary = "A step of many tiny kernels, eager vs captured once and replayed from a graph."
    lesson = "cuda-graphs"
    params = ParamSet(
        (
            Int("n", 4096, "elements of x", unit="elements", min=1, max=1 << 24),
            Int(
                "layers",
                24,
                "rounds of x = x + 0.1 * tanh(x * a + b) (4 kernels each)",
                min=1,
                max=2000,
            ),
        )
    )
    contenders = (
        Contender("eager", "eager: every kernel launched from Python", "torch-cuda"),
        Contender("graph", "graph: copy the input in, replay", "torch-cuda"),
        Contender("replay-only", "graph replay alone, input already in place", "torch-cuda"),
    )
    bench_params = ({"n": 4096, "layers": 24},)
    bench_suites = ("full",)

    def check(self, params: dict[str, Any], inventory: Inventory) -> None:
        if not inventory.available("torch-cuda"):
            why = inventory.reason("torch-cuda") or inventory.gpu_reason or "no GPU"
            raise ExperimentError(f"cuda-graphs captures CUDA work and needs a GPU: {why}")

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        n, layers = int(params["n"]), int(params["layers"])
        result = self.new_result(ctx, params)
        fits.require_fit(ctx, 16 * n * 4 * layers + (64 << 20), f"cuda-graphs with n={n:,}")
        import torch

        dev = ctx.torch_device
        pairs = coefficients(layers)

        def step(x: Any) -> Any:
            for a, b in pairs:
                x = torch.add(x, torch.tanh(x * a + b), alpha=0.1)
            return x

        x = torch.randn(n, device=dev)
        static_in = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step(static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        ctx.progress(0.05, "capturing")
        with device_queries_paused(), torch.cuda.graph(graph):
            static_out = step(static_in)

        def replayed(v: Any) -> Any:
            static_in.copy_(v)
            graph.replay()
            return static_out

        inputs = [torch.randn(n, device=dev) for _ in range(REPEAT)]
        worst = 0.0
        for v in inputs[:3]:
            want = step(v)
            worst = max(worst, float((replayed(v) - want).abs().max()))
        result.verdicts.append(
            Verdict.check(
                "graph", worst, 1e-5, metric="max abs difference from eager",
                reference="the eager step on the same inputs", dtype="fp32",
            )
        )  # fmt: skip
        runs = {
            "eager": lambda: [step(v) for v in inputs],
            "graph": lambda: [replayed(v) for v in inputs],
            "replay-only": lambda: [_replay(graph) for _ in inputs],
        }
        kernels = KERNELS_PER_LAYER * layers
        per_step: dict[str, float] = {}
        for i, (cid, fn) in enumerate(runs.items()):
            ctx.progress(0.1 + 0.85 * i / len(runs), cid)
            t = ctx.timer.measure(fn, sync="torch")
            result_rows.emit(
                ctx,
                result,
                row(
                    cid,
                    f"{n:g} x {layers} layers",
                    t,
                    work=REPEAT * kernels,
                    unit="kernels/s",
                    dtype="fp32",
                    step_us=t.median_s / REPEAT * 1e6,
                    note=f"{kernels} kernels a step, {REPEAT} steps a timed call",
                ),
            )
            per_step[cid] = t.median_s / REPEAT
        result.summary = {
            "n": n,
            "layers": layers,
            "kernels": kernels,
            "step_s": per_step,
            "speedup": per_step["eager"] / per_step["graph"],
            "saved_per_kernel_us": saved_per_kernel_us(
                per_step["eager"], per_step["graph"], kernels
            ),
            "eager_per_kernel_us": per_step["eager"] / kernels * 1e6,
            "graph_per_kernel_us": per_step["graph"] / kernels * 1e6,
        }
        result.explanation = (
            "Eager PyTorch launches each kernel from Python: the interpreter, the dispatcher and "
            "the driver cost the CPU several microseconds per kernel, more than a tiny kernel's "
            "own work, so the GPU waits between kernels. A CUDA graph records the kernels once, "
            "with their arguments and the addresses of their tensors, and a replay submits all "
            "of them in one launch: what remains is the GPU's own time per kernel. The graph "
            "replays on the memory it captured, so new inputs are copied into the static input "
            "first (the 'graph' row counts that copy). Larger kernels gain less: the launch is "
            "then a small part of each."
        )
        ctx.progress(1.0, "done")
        return self.finish(result)

    def headline(self, result: Result) -> str:
        s = result.summary
        t = s["step_s"]
        return (
            f"graph replay {s['speedup']:.2f}x faster than eager ({t['eager'] * 1e6:.0f} us -> "
            f"{t['graph'] * 1e6:.0f} us a step of {s['kernels']} kernels): "
            f"{s['saved_per_kernel_us']:.2f} us of launch overhead saved per kernel"
        )


EXPERIMENT = CudaGraphs()


def _replay(graph: Any) -> bool:
    """One replay of the captured step (True, for the timed call's list)."""
    graph.replay()
    return True
