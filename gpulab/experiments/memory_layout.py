"""Memory layout: contiguous vs strided access, and what `.contiguous()` itself costs.

A size x size float32 matrix x. The rows time, separately: an elementwise op on x; the same op
on the transposed view x.t() (no copy); the copy x.t().contiguous() alone; the seed's pattern
(copy, then op); a column sum read along rows vs across them; a stride-16 view that uses one
float in every 64 bytes; and a matmul with a transposed operand. Bytes counted are the useful
bytes (elements read + written), so a pattern that wastes memory traffic shows low GB/s.
Each result is checked against float64 a block of rows at a time (the references are computed
per block, on the device the rows ran on), so verification adds no full-size temporaries.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.params import Int, ParamSet
from gpulab.core.results import Result
from gpulab.experiments import backends, ceilings, fits, result_rows, verification
from gpulab.experiments.base import Contender, Context, Experiment
from gpulab.experiments.result_rows import row
from gpulab.experiments.wording import times

STRIDE = 16
TRANSPOSED_SUM = "x.T.sum(0) (transposed view)"


def fit_bytes(s: int, *, host: bool) -> int:
    """Memory of a run at size s: x and w (2 s^2 floats) plus the worst case's own tensors,
    'copy, then op' and 'x @ w.t().contiguous()' (a copy and a result: 2 s^2), i.e. 4 * s^2
    floats, plus the verification blocks and library workspaces (a fixed allowance)."""
    slack = fits.HOST_SLACK_BYTES if host else fits.SLACK_BYTES
    return int(4 * s * s * 4 * 1.05) + slack


def column_sums(x: Any) -> Any:
    """x.double().sum(0), a block of rows at a time (no float64 copy of x)."""
    step = max(1, verification.CHUNK // x.shape[1])
    total = None
    for i in range(0, x.shape[0], step):
        part = x[i : i + step].double().sum(0)
        total = part if total is None else total + part
    return total


class MemoryLayout(Experiment):
    """The `memory-layout` experiment: Contiguous vs transposed vs strided access, and the cost
    of .contiguous() itself."""

    id = "memory-layout"
    title = "Memory layout and contiguity"
    summary = "Contiguous vs transposed vs strided access, and the cost of .contiguous() itself."
    lesson = "performance-regimes"
    params = ParamSet(
        (
            Int("size", 8192, "the matrix is size x size float32 (GPU)", min=16, max=65536),
            Int("cpu_size", 2048, "size on the CPU", min=16, max=32768),
        )
    )
    contenders = (
        Contender("torch", "PyTorch GPU", "torch-cuda"),
        Contender("torch-cpu", "PyTorch CPU", "torch-cpu"),
    )
    bench_params = ({"size": 8192},)
    bench_suites = ("full",)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Run the contenders this machine has at `params`, streaming each row through `ctx`; the
        finished Result."""
        import torch

        result = self.new_result(ctx, params)
        c = result_rows.todo(self, result)[0]
        gpu = c.backend == "torch-cuda"
        if gpu:
            result.unavailable["torch-cpu"] = "the GPU ran instead"
        dev = torch.device(ctx.torch_device if gpu else "cpu")
        s = int(params["size"] if gpu else params["cpu_size"])
        what = f"memory-layout at {s} x {s}"
        if gpu:
            fits.require_fit(ctx, fit_bytes(s, host=False), what)
        else:
            fits.require_host_fit(fit_bytes(s, host=True), what)
        p = ceilings.peaks(ctx)
        x = torch.rand(s, s, device=dev)
        w = torch.rand(s, s, device=dev)
        xt = x.t()
        e = s * s * 4  # bytes in one matrix
        sv = x.view(-1)[::STRIDE]
        # (name, op, useful bytes, reference for a block of rows of the result: float64)
        cases = [
            ("x * 2 (contiguous)", lambda: x * 2, 2 * e, lambda r: x[r].double() * 2),
            (
                "x.t() * 2 (transposed view)",
                lambda: xt * 2,
                2 * e,
                lambda r: xt[r].double() * 2,
            ),
            (
                "x.t().contiguous() (the copy alone)",
                lambda: xt.contiguous(),
                2 * e,
                lambda r: xt[r].double(),
            ),
            (
                "x.t().contiguous() * 2 (copy, then op)",
                lambda: xt.contiguous() * 2,
                2 * e,
                lambda r: xt[r].double() * 2,
            ),
            ("x.sum(dim=1) (along rows)", lambda: x.sum(dim=1), e, lambda r: x[r].double().sum(1)),
            ("x.sum(dim=0) (across rows)", lambda: x.sum(dim=0), e, "column sums"),
            # The seed's own case: a column sum of the transposed view is x's row sums,
            # read in x's stored order.
            (TRANSPOSED_SUM, lambda: xt.sum(0), e, lambda r: x[r].double().sum(1)),
            (
                f"x.view(-1)[::{STRIDE}] * 2 (1 float per 64 B)",
                lambda: sv * 2,
                2 * sv.numel() * 4,
                lambda r: sv[r].double() * 2,
            ),
            ("x @ w", lambda: x @ w, 3 * e, None),
            ("x @ w.t() (transposed operand)", lambda: x @ w.t(), 3 * e, None),
            ("x @ w.t().contiguous()", lambda: x @ w.t().contiguous(), 3 * e, None),
        ]
        times: dict[str, float] = {}
        with backends.tf32_mode(False):
            for i, (name, fn, nbytes, ref_fn) in enumerate(cases):
                ctx.progress(i / len(cases), name)
                out = fn()
                if ref_fn is None:
                    k = min(256, s)
                    b = w if "w.t" not in name else w.t()
                    v = verification.matmul_verdict(name, out[:k], x[:k], b, "fp32", size=f"{s}")
                else:
                    ref = column_sums(x) if ref_fn == "column sums" else ref_fn
                    v = verification.verdict(name, out, ref, "fp32", size=f"{s}")
                result.verdicts.append(v)
                del out
                is_mm = name.startswith("x @")
                # Long GPU matmuls in the calibration's sustained regime (single calls otherwise).
                kw = backends.sustained(ctx, fn, c.backend) if is_mm else {}
                timing = ctx.timer.measure(fn, sync=backends.sync_kind(c.backend), **kw)
                pk = None if is_mm else ceilings.peak_here(p, c.backend, "copy")
                m = row(
                    name,
                    f"{s} x {s}",
                    timing,
                    work=(2.0 * s**3) if is_mm else nbytes,
                    unit="TFLOP/s" if is_mm else "GB/s",
                    scale=1e12 if is_mm else 1e9,
                    dtype="fp32",
                    peak=pk,
                    peak_name="memory copy (read + written)" if pk else "",
                    counted="2 * s^3 flops" if is_mm else "useful bytes read + written",
                )
                result_rows.emit(ctx, result, m)
                times[name] = m.time_median_s
        ctx.progress(1.0, "done")
        result.summary = {"size": s, "median_s": times}
        names = [n for n, *_ in cases]
        t_op, t_view, t_copy, t_both = (times.get(n) for n in names[:4])
        if t_op and t_copy and t_both and t_view:
            result.summary["copy_then_op_over_view"] = t_both / t_view
            result.summary["copy_share_of_copy_then_op"] = t_copy / t_both
        t_rows, t_t = times.get("x.sum(dim=1) (along rows)"), times.get(TRANSPOSED_SUM)
        if t_rows and t_t:
            result.summary["transposed_sum_over_row_sum"] = t_t / t_rows
        result.explanation = (
            "A transpose is free: x.t() only swaps strides. Elementwise ops on it run as fast "
            "as on x, because PyTorch walks the memory in its stored order. Calling "
            ".contiguous() first copies the whole matrix, so 'copy, then op' costs the copy "
            "plus the op: the seed measured exactly this (5x slower) and still told you to do "
            "it. Make a tensor contiguous only when something needs it (a .view(), a custom "
            "kernel, or data reused many times), and once, not on every call. What does hurt "
            "is touching memory you do not use: the stride-16 view uses 4 bytes of every 64 "
            "the memory delivers, so its useful GB/s collapses. Reductions across rows and "
            "matmuls with a transposed operand are handled by the library's kernels (cuBLAS "
            "reads a transposed operand directly), so copying first only adds time. The "
            "seed's x.T.sum(0) is the same sum as x.sum(dim=1): PyTorch sees through the view "
            "and reads x in its stored order, so it should take about as long as that row."
        )
        return self.finish(result)

    def headline(self, result: Result) -> str:
        """One line: .contiguous() then the op, as a multiple of the op on the transposed view."""
        s = result.summary
        if s.get("copy_then_op_over_view"):
            return (
                f".contiguous() then the op took {times(s['copy_then_op_over_view'])} as long as the "
                f"op on the transposed view (n={s.get('size')})"
            )
        return ""


EXPERIMENT = MemoryLayout()
