"""Check for profile-step: the learner fixes a slow training step that a profile explains.

The lesson profiles a regression step slowed by a loop over rows and an `.item()` per parameter.
This step is another: a multi-label classifier (an MLP 32-128-128-32, binary cross-entropy per
label, SGD with momentum) whose batches carry padding rows. The slow step drops them with boolean
masks (`x[keep]`, `y[keep]`: operators whose output size depends on the data, so on a GPU each
waits for the device to tell the host that size) and sums its loss over the labels in a Python
loop (a dozen tiny kernels per label, forward and backward). A profile shows both; the fix keeps
every row and weights each by its mask, and computes the loss of all labels in one call.

Correctness: every input set is a short training run from seeded weights, a fresh batch (and a
fresh mask) every step. The losses the learner's step returns and the weights it leaves must
follow the same run in float64, computed before the learner's file is loaded (the slow step's
arithmetic, so the fixed step must compute exactly what the slow one did). A fresh batch every
step catches a step that returns an earlier result; the weights catch one that skips the
backward or the update.

The last input set profiles the step (gpulab.core.step_trace: torch.profiler, each step in a
record_function range) after two warm steps, and profiles the check's own copy of the slow step
on the same batches:

- syncs: on a GPU, runtime calls that block the host (cudaStreamSynchronize and its kin) inside
  the learner's steps must be 0. On a CPU nothing waits for a device, so the check counts what
  would: readbacks (aten::_local_scalar_dense: .item(), float(t), bool(t); .tolist(), .numpy())
  and operators whose output size depends on the data (aten::nonzero under t[mask],
  masked_select, unique). Readbacks are refused on a GPU too: a wait hidden from the runtime's
  sync calls (an event's query spun on, then apply_ over a pinned copy) is still a wait;
- kernels: on a GPU, the kernels per step the learner's step saves against the slow step must be
  at least KERNEL_SAVED of what our own step saves, both profiled in the same run (the loop over
  labels is what fills the slow step's count); on a CPU, operators that do work stand in for
  them, judged the same way;
- speed (GPU only): the slow step, the learner's and ours in interleaved rounds, synchronized
  wall time per step, median; the learner's must save at least half the time ours saves
  (gpulab.exercises.saving; where ours gains too little on this GPU, the verdict says so and
  speed is not graded).

Every step after the warm-up ones is still a training step: the weights at the end, after the
profiled and the timed steps, must match the float64 run over all of them.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gpulab.core import step_trace as st
from gpulab.exercises import api, saving
from gpulab.exercises.own_work import not_plain

ENTRY = "train_step"
IN, WIDTH, LABELS, LAYERS = 32, 128, 32, 3
LR, MOMENTUM = 0.5, 0.9
KEPT = 0.7  # the share of a batch's rows that are real; the rest is padding
PROFILE_ROWS = 64
WARM, PROFILED = 2, 3  # steps before the profile, steps under it
ROUNDS, PER_ROUND = 5, 3  # timing on a GPU: interleaved rounds, steps per round (+1 warm round)
# of the kernels (GPU) or operators (CPU) per step that our step saves against the slow one,
# the learner's must save at least this share
KERNEL_SAVED = 0.9
LOSS_RTOL = 2e-4  # float32 against float64, the rows summed in another order
WEIGHT_RTOL = 5e-4  # of the largest weight of the tensor


def _weights(rng: np.random.Generator) -> list[np.ndarray]:
    sizes = [IN] + [WIDTH] * (LAYERS - 1) + [LABELS]
    out = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        out.append((rng.uniform(-1, 1, (fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32))
        out.append(rng.uniform(-0.1, 0.1, fan_out).astype(np.float32))
    return out


def _batches(rng: np.random.Generator, rows: int, steps: int) -> list[tuple[Any, Any, Any]]:
    """(x, y, keep) per step: features, multi-hot labels a teacher draws from them, and which
    rows are real (at least one a batch); padding rows hold features and labels like any other,
    so a step that forgets the mask trains on them and goes elsewhere."""
    teacher = rng.standard_normal((IN, LABELS)) / np.sqrt(IN)
    out = []
    for _ in range(steps):
        x = rng.standard_normal((rows, IN)).astype(np.float32)
        noisy = x @ teacher + 0.3 * rng.standard_normal((rows, LABELS))
        y = (noisy > 0.2).astype(np.float32)
        keep = rng.random(rows) < KEPT
        keep[rng.integers(rows)] = True
        out.append((x, y, keep))
    return out


def _profile_steps(ctx: api.Context) -> int:
    timed = (ROUNDS + 1) * PER_ROUND if ctx.gpu else 0
    return WARM + PROFILED + 1 + timed  # one more step: where the reads come from


def cases(ctx: api.Context) -> list[api.Case]:
    rng = ctx.rng
    out = []
    for rows, steps in ((1, 2), (33, 3), (64, 4)):
        out.append(
            api.Case(
                f"{rows} row{'s' if rows > 1 else ''}, {steps} steps",
                {"weights": _weights(rng), "batches": _batches(rng, rows, steps)},
            )
        )
    n = _profile_steps(ctx)
    if ctx.gpu:
        name = (
            f"profile and time ({PROFILE_ROWS} rows: syncs, kernels, speed against the slow step)"
        )
    else:
        name = (
            f"profile on the CPU ({PROFILE_ROWS} rows: reads into Python, operators sized by "
            "the data, operators per step; the speed and the device syncs are graded on a GPU "
            "only)"
        )
    out.append(
        api.Case(
            name,
            {"weights": _weights(rng), "batches": _batches(rng, PROFILE_ROWS, n)},
            meta={"profile": True},
        )
    )
    return out


def _forward(params: list[Any], x: Any) -> Any:
    import torch.nn.functional as F

    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def _slow_step(params: list[Any], momenta: list[Any], x: Any, y: Any, keep: Any) -> Any:
    """The starter's step, the check's own copy: the peer the learner's is timed against."""
    import torch
    import torch.nn.functional as F

    for p in params:
        p.grad = None
    xs, ys = x[keep], y[keep]
    logits = _forward(params, xs)
    loss = 0.0
    for j in range(ys.shape[1]):
        loss = loss + F.binary_cross_entropy_with_logits(logits[:, j], ys[:, j])
    loss = loss / ys.shape[1]
    loss.backward()
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad)
            p.sub_(m, alpha=LR)
    return loss.detach()


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    """The run in float64 on the CPU (the slow step's arithmetic, the kept rows selected on the
    host): the loss of every step and the weights at the end."""
    import torch
    import torch.nn.functional as F

    params = [torch.from_numpy(w).double().requires_grad_() for w in case.args["weights"]]
    momenta = [torch.zeros_like(p) for p in params]
    losses = []
    for x, y, keep in case.args["batches"]:
        xt = torch.from_numpy(x[keep]).double()
        yt = torch.from_numpy(y[keep]).double()
        for p in params:
            p.grad = None
        loss = F.binary_cross_entropy_with_logits(_forward(params, xt), yt)
        loss.backward()
        with torch.no_grad():
            for p, m in zip(params, momenta, strict=True):
                m.mul_(MOMENTUM).add_(p.grad)
                p.sub_(m, alpha=LR)
        losses.append(float(loss.detach()))
    return {"losses": losses, "weights": [p.detach().numpy() for p in params]}


def _on_device(
    case: api.Case, device: Any
) -> tuple[list[Any], list[Any], list[tuple[Any, Any, Any]]]:
    import torch

    # Copies (torch.tensor), never views of the case's arrays: on a CPU, from_numpy().to("cpu")
    # would share them, and the slow step's updates would land in the learner's weights.
    params = [torch.tensor(w, device=device).requires_grad_() for w in case.args["weights"]]
    momenta = [torch.zeros_like(p) for p in params]
    batches = [
        tuple(torch.tensor(a, device=device) for a in batch) for batch in case.args["batches"]
    ]
    return params, momenta, batches  # type: ignore[return-value]


def _loss_value(got: Any, step: int) -> float:
    import torch

    if isinstance(got, torch.Tensor):
        if got.numel() != 1:
            raise api.CheckError(
                f"step {step}: train_step returned a tensor of shape {tuple(got.shape)}: return "
                "the loss, a 0-d tensor"
            )
        return float(got.detach().float().cpu())  # the check's read, outside your step
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        return float(got)
    raise api.CheckError(
        f"step {step}: train_step returned {type(got).__name__}: return the loss, a 0-d tensor"
    )


def _source(fn: Any) -> str:
    """The learner's file name, so the profile can name the lines a readback came from."""
    try:
        return Path(inspect.unwrap(fn).__code__.co_filename).name
    except (AttributeError, ValueError):
        return ""


class _HostCuts:
    """Counts the calls that cut a tensor at sizes read from another tensor's values
    (tensor_split handed a tensor of cut points): ATen reads them from its memory on the host,
    with no aten::_local_scalar_dense for the profile to count, and the pieces are sized by the
    data. A red team's step ordered the rows real-first and cut them at keep.sum(): the slow
    step's data-sized selection, no read and no sized operator counted on a CPU."""

    def __init__(self) -> None:
        self.count = 0
        self.on = True
        # The shapes of what each torch call made, a list a step: a step that keeps every row
        # makes the same shapes whatever the mask, one that selects the real rows by any door (a
        # red team's pack_padded_sequence cut at keep.sum(), read from its memory in C++) does not
        self.shapes: list[list[tuple[int, ...]]] = []

    @staticmethod
    def _cuts_by_tensor(func: Any, args: Any, kwargs: Any) -> bool:
        import torch

        name = getattr(func, "__name__", "") or ""
        if name != "tensor_split" and not str(func).startswith("aten.tensor_split"):
            return False
        at = list(args[1:2]) + [
            kwargs.get(k) for k in ("tensor_indices_or_sections", "indices_or_sections", "sections")
        ]
        return any(isinstance(a, torch.Tensor) for a in at)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        if not self.on:
            yield
            return
        import torch
        from torch.overrides import TorchFunctionMode

        outer = self
        made: list[tuple[int, ...]] = []
        self.shapes.append(made)

        class _Cuts(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                if outer._cuts_by_tensor(func, args, kwargs):
                    outer.count += 1
                out = func(*args, **kwargs)
                for t in out if isinstance(out, list | tuple) else (out,):
                    if isinstance(t, torch.Tensor):
                        made.append(tuple(t.shape))
                return out

        with _Cuts():
            yield

    def sized_by_data(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The first pair of shapes that differ between two steps on same-sized batches."""
        first = self.shapes[0] if self.shapes else []
        for other in self.shapes[1:]:
            for a, b in zip(first, other, strict=False):
                if a != b:
                    return a, b
            if len(other) != len(first):
                return (len(first),), (len(other),)
        return None


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    import torch

    device = torch.device(ctx.device)
    params, momenta, batches = _on_device(case, device)
    losses: list[float] = []
    untouched = [tuple(a.clone() for a in batch) for batch in batches]

    def step(i: int, call: Any = fn) -> None:
        before = [p.detach().clone() for p in params]
        losses.append(_loss_value(call(params, momenta, *batches[i]), i))
        if all(torch.equal(b, p) for b, p in zip(before, params, strict=True)):
            raise api.CheckError(
                f"step {i}: the weights did not change: a training step must run the backward "
                "and update every parameter (in place)"
            )

    profile = case.meta.get("profile", False)
    for i in range(WARM if profile else len(batches)):
        step(i)
    out: dict[str, Any] = {}
    if profile:
        # The profiled and timed steps run inside timed_calls: the grader's watch still asks
        # its rules of every call (a plain result, no hook or torch mode left on, no thread),
        # but with no synchronize after it, which the profile would count as your step's.
        # Called bare, past the watch, a red team's step told the profiled calls by their
        # count, queued them and returned a tensor subclass whose first read (after the
        # profile and the timing) ran the slow step for every queued batch: nothing in the
        # profile, the right losses and weights
        source = _source(fn)
        returned: list[Any] = []
        cuts = _HostCuts()

        def yours(i: int) -> None:
            with cuts.watching():
                got = fn(params, momenta, *batches[i])
            lazy = not_plain(got) or not_plain(params) or not_plain(momenta)
            if lazy:
                raise api.CheckError(f"step {i}: {lazy}")
            returned.append(got)

        with ctx.timed_calls():
            trace = st.profile_steps(lambda i: yours(WARM + i), PROFILED, gpu=ctx.gpu)
            # Where the reads come from, from one more step with Python's calls recorded (they
            # cost the profile far more than the operators do: only when there is a read to find)
            if trace.readbacks or trace.sized:
                trace.lines = st.profile_steps(
                    lambda i: yours(WARM + PROFILED), 1, gpu=ctx.gpu, source=source
                ).lines
            else:
                yours(WARM + PROFILED)
        # (timed_calls put back, as it ended, what your steps rebound: the slow step and ours
        # are profiled next)
        slow_p, slow_m, _ = _on_device(case, device)
        slow_losses: list[Any] = []

        def slow(i: int) -> None:
            slow_losses.append(_slow_step(slow_p, slow_m, *batches[i]))

        for i in range(WARM):
            slow(i)
        slow_trace = st.profile_steps(lambda i: slow(WARM + i), 1, gpu=ctx.gpu)
        # Our step on its own copy of the weights, profiled and timed like yours: what the fix
        # saves on this device is read from it, not from a constant
        ref_p, ref_m, _ = _on_device(case, device)
        mine = inspect.unwrap(ctx.reference())

        def ours(i: int) -> None:
            mine(ref_p, ref_m, *batches[i])

        for i in range(WARM):
            ours(i)
        ours_trace = st.profile_steps(lambda i: ours(WARM + i), 1, gpu=ctx.gpu)
        out["trace"], out["slow_trace"] = trace.to_dict(), slow_trace.to_dict()
        out["host_cuts"] = cuts.count / (PROFILED + 1)
        out["sized_shapes"] = cuts.sized_by_data()
        cuts.on = False  # the timed steps run bare: a mode there would cost yours time alone
        out["ours_trace"] = ours_trace.to_dict()
        out["table"] = st.table(trace)
        if ctx.gpu:
            # What your steps rebind (torch's functions, ours among them) is put back after
            # each turn of yours, outside its clock: the slow step and ours run after it
            restore = getattr(ctx.watch, "after_call", None)

            def after(name: str) -> None:
                if name == "yours" and restore is not None:
                    restore()

            with ctx.timed_calls():
                # Each goes on with the batches after the ones it has used: the slow step
                # profiled one step, yours PROFILED.
                out["timing"] = st.time_steps(
                    {
                        "slow": lambda i: slow(WARM + 1 + i),
                        "yours": lambda i: yours(WARM + PROFILED + 1 + i),
                        "ours": lambda i: ours(WARM + 1 + i),
                    },
                    gpu=True,
                    rounds=ROUNDS,
                    per_round=PER_ROUND,
                    after=after,
                )
        for i, got in enumerate(returned):
            losses.append(_loss_value(got, WARM + i))
    for i, (batch, kept) in enumerate(zip(batches, untouched, strict=True)):
        if not all(torch.equal(a, b) for a, b in zip(batch, kept, strict=True)):
            raise api.CheckError(
                f"train_step changed its input x, y or keep (batch {i}): leave them"
            )
    out["losses"] = losses
    out["weights"] = [p.detach().cpu().numpy() for p in params]
    return out


def _weights_mismatch(want: list[Any], got: list[Any], steps: int) -> api.Mismatch | None:
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        if g.shape != w.shape:
            return api.Mismatch(f"parameter {k} has shape {g.shape}, expected {w.shape}")
        err = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
        scale = float(np.max(np.abs(w))) or 1.0
        if not err <= WEIGHT_RTOL * scale:
            kind = "weight" if k % 2 == 0 else "bias"
            return api.Mismatch(
                f"after {steps} steps the {kind} of layer {k // 2 + 1} differs from the slow "
                f"step's by up to {err:.3g} (largest value {scale:.3g}): the update, the "
                "momentum or the clipping is not the slow step's (or a step skipped its work)",
                max_error=err,
            )
    return None


def compare(want: dict, got: dict, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    """Losses, then weights, then (the profile set) syncs, kernels and speed."""
    w_losses, g_losses = want["losses"], got["losses"]
    if len(g_losses) != len(w_losses):
        return api.Mismatch(f"{len(g_losses)} losses for {len(w_losses)} steps")
    for i, (w, g) in enumerate(zip(w_losses, g_losses, strict=True)):
        if not abs(g - w) <= LOSS_RTOL * abs(w):
            again = ""
            if g in g_losses[:i]:
                again = " (an earlier step's loss: every step gets a new batch)"
            elif case.meta.get("profile") and i >= WARM:
                again = " (a profiled or timed step: does your step skip work on later calls?)"
            return api.Mismatch(
                f"step {i}: the loss is {g:.6g}, the slow step's {w:.6g}{again}",
                index=i,
                expected=w,
                got=g,
                max_error=abs(g - w),
            )
    bad = _weights_mismatch(want["weights"], got["weights"], len(w_losses))
    if bad is not None or "trace" not in got:
        return bad
    return _judge_profile(got, ctx)


def _judge_profile(got: dict, ctx: api.Context) -> api.Mismatch | None:
    t, slow = got["trace"], got["slow_trace"]
    where = f", called in {'; '.join(t['lines'][:3])} of your file" if t["lines"] else ""
    sized = t.get("sized", 0.0)
    if ctx.gpu and t["syncs"]:
        calls = ", ".join(f"{k} x{v / t['steps']:.3g}" for k, v in sorted(t["sync_calls"].items()))
        return api.Mismatch(
            f"your step waits for the GPU {t['syncs']:.3g} times per step ({calls}; "
            f"{t['readbacks']:.3g} aten::_local_scalar_dense, {sized:.3g} operators sized by "
            f"the data{where}): an operator whose output size depends on the data (t[mask], "
            "nonzero, unique) or a Python number read from a GPU tensor (.item(), float(), "
            "if t:) stops the host until the GPU is done. Keep every row and weight it by its "
            "mask, on the device",
            expected=0,
            got=t["syncs"],
        )
    if not ctx.gpu and sized:
        return api.Mismatch(
            f"your step runs {sized:.3g} operator(s) per step whose output size depends on the "
            f"data (aten::nonzero under t[mask], masked_select, unique{where}); on a GPU each "
            "waits for the device to learn that size, a sync: keep every row and weight it by "
            "its mask, on the device",
            expected=0,
            got=sized,
        )
    # On a GPU too: a read whose wait is hidden from the runtime's sync calls (a spin on an
    # event's query, a copy into pinned memory then apply_ on the host) still stops the host
    if t["readbacks"]:
        return api.Mismatch(
            f"your step reads {t['readbacks']:.3g} Python number(s) from tensors per step "
            f"(.item(), float(t), .tolist(), .numpy(), apply_ and their kin{where}); on a GPU "
            "each waits for the GPU, whatever the wait is called: keep the numbers the step "
            "needs as tensors, on the device",
            expected=0,
            got=t["readbacks"],
        )
    cuts = got.get("host_cuts", 0.0)
    if cuts:
        return api.Mismatch(
            f"your step cuts tensors at sizes read from a tensor's values {cuts:.3g} time(s) per "
            "step (torch.tensor_split handed a tensor of cut points: the host reads them, on a "
            "GPU once the device has computed them, a sync, and the pieces are sized by the "
            "data): keep every row and weight it by its mask, on the device",
            expected=0,
            got=cuts,
        )
    differ = got.get("sized_shapes")
    if differ:
        return api.Mismatch(
            f"your step makes tensors whose size changes with the mask (shape {differ[0]} in one "
            f"profiled step, {differ[1]} in the same place of another, every batch {PROFILE_ROWS} "
            "rows): the real rows are selected by size, so on a GPU the host waits to learn it "
            "(a sync), whatever call does it; keep every row and weight it by its mask"
        )
    what = "kernels" if ctx.gpu else "operators"
    ours_t = got["ours_trace"]
    yours, theirs, mine = (
        (t["kernels"], slow["kernels"], ours_t["kernels"])
        if ctx.gpu
        else (t["ops"], slow["ops"], ours_t["ops"])
    )
    bound = mine + (1 - KERNEL_SAVED) * max(0.0, theirs - mine)
    if yours > bound:
        return api.Mismatch(
            f"your step launched {yours:,.0f} {what} per step, the slow step {theirs:,.0f} and "
            f"ours {mine:,.0f}; at most {bound:,.0f} passes ({KERNEL_SAVED:.0%} of what ours "
            "saves): a Python loop (over labels, rows or parameters) launches the same few "
            "small kernels again at every turn, forward and backward. Compute them all at once",
            expected=bound,
            got=yours,
        )
    timing = got.get("timing")
    if timing:
        measured = saving.Saving(
            timing["slow"]["median_s"],
            timing["yours"]["median_s"],
            timing["ours"]["median_s"],
            ROUNDS,
        )
        bad, note = saving.judge(measured, what="step", baseline="the slow step")
        if note:
            ctx.notes.append(note)
        return bad
    return None
