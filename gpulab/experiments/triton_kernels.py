"""Triton kernels: a vector add and a fused row softmax against torch, in GB/s of the copy.

A Triton kernel is written per block of elements (a program), not per thread; the compiler
picks the threads, the vector loads and the shared memory. This experiment shows what that costs
against PyTorch's own kernels, on the same tensors in the same run: the add against `torch.add`,
the fused softmax (one read, one write per element) against `torch.softmax` (also one fused
kernel) and against the softmax written as five eager torch operations (max, subtract, exp, sum,
divide: each a pass over memory). GB/s counts the bytes the computation needs (every input read
once, the output written once), against this GPU's calibrated device copy.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result
from gpulab.experiments import ceilings, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import label, times

ADD = ("triton-add", "torch-add")
SOFTMAX = ("triton-softmax", "torch-softmax", "torch-softmax-eager")


def _eager_softmax(x: Any) -> Any:
    """The softmax as five eager operations, each a kernel and a pass over memory."""
    m = x.amax(dim=1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(dim=1, keepdim=True)


class TritonKernels(Experiment):
    id = "triton-kernels"
    title = "Triton kernels"
    summary = "A Triton vector add and fused row softmax vs torch, in GB/s of the device copy."
    lesson = "triton"
    params = ParamSet(
        (
            Int("n", 50_000_000, "vector add: elements", unit="elements", min=1, max=2e9),
            Int("rows", 16384, "softmax: rows", unit="rows", min=1, max=1 << 24),
            Int("cols", 4096, "softmax: columns (one row per program)", min=1, max=32768),
        )
    )
    contenders = (
        Contender("triton-add", "Triton add (1024 per program)", "torch-cuda"),
        Contender("torch-add", "torch.add", "torch-cuda"),
        Contender("triton-softmax", "Triton softmax (fused, 1 kernel)", "torch-cuda"),
        Contender("torch-softmax", "torch.softmax (1 kernel)", "torch-cuda"),
        Contender("torch-softmax-eager", "softmax as 5 eager torch ops", "torch-cuda"),
    )
    bench_params = ({"n": 100_000_000, "rows": 16384, "cols": 4096},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        n, rows, cols = int(params["n"]), int(params["rows"]), int(params["cols"])
        result = self.new_result(ctx, params)
        if ctx.has_cuda:
            try:
                import triton  # noqa: F401  - deferred: Triton is optional and heavy
            except ImportError as exc:
                for c in ("triton-add", "triton-softmax"):
                    result.unavailable[c] = f"Triton is not installed: {exc} (pip install triton)"
        todo = result_rows.todo(self, result)
        if not todo:
            result.explanation = self._explain()
            return self.finish(result)
        import torch  # deferred: only with a GPU to measure

        fits.require_fit(ctx, 4 * (3 * n + 4 * rows * cols) * 1.1, f"triton-kernels n={n:,}")
        dev = torch.device(ctx.torch_device)
        p = ceilings.peaks(ctx)
        pk = ceilings.peak_here(p, "torch-cuda", "copy")
        g = torch.Generator(device=dev).manual_seed(0)
        x = torch.rand(n, device=dev, generator=g) - 0.5
        y = torch.rand(n, device=dev, generator=g) - 0.5
        out = torch.empty_like(x)
        s_in = torch.randn(rows, cols, device=dev, generator=g) * 4
        s_out = torch.empty_like(s_in)
        ref_add = (x.double() + y.double()).cpu().numpy()
        s64 = s_in.double()
        ref_soft = torch.softmax(s64, dim=1).cpu().numpy()
        del s64
        gbs: dict[str, float] = {}
        for i, c in enumerate(todo):
            ctx.progress(i / len(todo), c.label)
            fn, size, work = self._call(c.id, x, y, out, s_in, s_out, n, rows, cols)
            got = fn()  # the checked call (Triton: also its compile)
            torch.cuda.synchronize()
            ref = ref_add if c.id in ADD else ref_soft
            result.verdicts.append(
                verification.verdict(
                    c.id,
                    got.cpu().numpy(),
                    ref,
                    "fp32",
                    size=size,
                    ctx=ctx,
                    reference="float64 torch on the GPU",
                )
            )
            del got
            timing = ctx.timer.measure(fn, sync="torch")
            m = result_rows.emit(
                ctx,
                result,
                row(
                    c.id,
                    size,
                    timing,
                    work=work,
                    unit="GB/s",
                    scale=1e9,
                    dtype="fp32",
                    peak=pk,
                    peak_name="memory copy (read + written)" if pk else "",
                    bytes_counted=(
                        "12 * n (x and y read, out written)"
                        if c.id in ADD
                        else "8 * rows * cols (x read once, out written once)"
                    ),
                ),
            )
            gbs[c.id] = m.throughput or 0.0
        ctx.progress(1.0, "done")
        result.summary = {"n": n, "rows": rows, "cols": cols, "gbs": gbs}
        if pk:
            result.summary["copy_gbs"] = float(pk)
            for cid, v in gbs.items():
                result.summary[f"{cid}_of_copy"] = v / float(pk)
        for mine, theirs in (
            ("triton-add", "torch-add"),
            ("triton-softmax", "torch-softmax"),
            ("triton-softmax", "torch-softmax-eager"),
        ):
            if gbs.get(mine) and gbs.get(theirs):
                result.summary[f"{mine}_over_{theirs}"] = gbs[mine] / gbs[theirs]
        result.explanation = self._explain()
        return self.finish(result)

    @staticmethod
    def _call(
        cid: str, x: Any, y: Any, out: Any, s_in: Any, s_out: Any, n: int, rows: int, cols: int
    ) -> tuple[Any, str, float]:
        """(a call returning the output, the row's size, bytes it needs)."""
        import torch  # deferred: see run

        add_size, soft_size = f"{n:g}", f"{rows}x{cols}"
        if cid == "torch-add":
            return (lambda: torch.add(x, y, out=out)), add_size, 12.0 * n
        if cid == "torch-softmax":
            return (lambda: torch.softmax(s_in, dim=1)), soft_size, 8.0 * rows * cols
        if cid == "torch-softmax-eager":
            return (lambda: _eager_softmax(s_in)), soft_size, 8.0 * rows * cols
        from gpulab.experiments import triton_src  # deferred: imports Triton

        if cid == "triton-add":
            return (lambda: triton_src.add(x, y, out)), add_size, 12.0 * n
        return (lambda: triton_src.softmax(s_in, s_out)), soft_size, 8.0 * rows * cols

    @staticmethod
    def _explain() -> str:
        return (
            "A Triton program handles a block of elements: tl.program_id picks the block, "
            "tl.arange the offsets in it, a mask the lanes inside the array. The compiler maps "
            "the block onto threads and vector loads, so a vector add written in five lines "
            "streams at the rate of torch.add, near the device copy. The softmax keeps a whole "
            "row in registers: max, exp, sum and divide between one load and one store, where "
            "the same softmax written as eager torch operations makes five passes over memory. "
            "torch.softmax is itself one fused kernel, written for every shape and dtype; a "
            "kernel for one shape (a whole row per program) can beat it, as on an H200 (1.4x at "
            "16384 x 4096). The first call of each Triton kernel compiles it (seconds); the rows "
            "are timed warm."
        )

    def headline(self, result: Result) -> str:
        s = result.summary
        over = s.get("triton-softmax_over_torch-softmax-eager")
        add = s.get("triton-add_of_copy")
        if over and add:
            return (
                f"Triton's add streams at {100 * add:.0f}% of the copy; its fused softmax runs "
                f"at {times(over)} the rate of {label(self, 'torch-softmax-eager')}"
            )
        return "Triton kernels: nothing ran here (they need a GPU)"


EXPERIMENT = TritonKernels()
