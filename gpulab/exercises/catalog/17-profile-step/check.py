"""Check for profile-step: the learner fixes a slow training step that a profile explains.

Correctness: every input set is a short training run (an MLP 32-128-128-128-8, SGD with
momentum, gradients clipped to a global norm) from seeded weights, a fresh batch every step.
The losses the learner's step returns and the weights it leaves must follow the same run in
float64, computed before the learner's file is loaded (the slow step's arithmetic, so the fixed
step must compute exactly what the slow one did). A fresh batch every step catches a step that
returns an earlier result; the weights catch one that skips the backward or the update.

The last input set profiles the step (gpulab.core.step_trace: torch.profiler, each step in a
record_function range) after two warm steps, and profiles the check's own copy of the slow
step on the same batches:

- syncs: on a GPU, runtime calls that block the host (cudaStreamSynchronize and its kin) inside
  the learner's steps must be 0. On a CPU nothing waits for a device, so the check counts what
  would: readbacks (aten::_local_scalar_dense: .item(), float(t), bool(t), min() on a tensor);
- kernels: on a GPU, the kernels per step the learner's step saves against the slow step must be
  at least KERNEL_SAVED of what our own step saves, both profiled in the same run (the loop over
  rows is what fills the slow step's count: thousands at 64 rows, against a few dozen for the
  batched step, measured on an H200); on a CPU, operators that do work stand in for them,
  judged the same way;
- speed (GPU only): the slow step, the learner's and ours in interleaved rounds, synchronized
  wall time per step, median; the learner's must save at least half the time ours saves
  (gpulab.exercises.saving; where ours gains too little on this GPU, the verdict says so and
  speed is not graded).

Every step after the warm-up ones is still a training step: the weights at the end, after the
profiled and the timed steps, must match the float64 run over all of them.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np

from gpulab.core import step_trace as st
from gpulab.exercises import api, saving

ENTRY = "train_step"
IN, WIDTH, OUT, LAYERS = 32, 128, 8, 4
LR, MOMENTUM, MAX_NORM = 0.05, 0.9, 1.0
PROFILE_ROWS = 64
WARM, PROFILED = 2, 3  # steps before the profile, steps under it
ROUNDS, PER_ROUND = 5, 3  # timing on a GPU: interleaved rounds, steps per round (+1 warm round)
# of the kernels (GPU) or operators (CPU) per step that our step saves against the slow one,
# the learner's must save at least this share
KERNEL_SAVED = 0.9
LOSS_RTOL = 2e-4  # float32 against float64, the rows summed in another order
WEIGHT_RTOL = 5e-4  # of the largest weight of the tensor


def _weights(rng: np.random.Generator) -> list[np.ndarray]:
    sizes = [IN] + [WIDTH] * (LAYERS - 1) + [OUT]
    out = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        out.append((rng.uniform(-1, 1, (fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32))
        out.append(rng.uniform(-0.1, 0.1, fan_out).astype(np.float32))
    return out


def _batches(rng: np.random.Generator, rows: int, steps: int) -> list[tuple[Any, Any]]:
    """Targets well away from the first predictions (an offset), so the gradient norm is above
    MAX_NORM and the clipping matters in most steps."""
    teacher = rng.standard_normal((IN, OUT)) / np.sqrt(IN)
    out = []
    for _ in range(steps):
        x = rng.standard_normal((rows, IN)).astype(np.float32)
        y = (3.0 * np.tanh(x @ teacher) + 2.0 + 0.1 * rng.standard_normal((rows, OUT))).astype(
            np.float32
        )
        out.append((x, y))
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
            f"profile on the CPU ({PROFILE_ROWS} rows: readbacks and operators; the speed and "
            "the device syncs are graded on a GPU only)"
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


def _slow_step(params: list[Any], momenta: list[Any], x: Any, y: Any) -> Any:
    """The starter's step, the check's own copy: the peer the learner's is timed against."""
    import torch

    for p in params:
        p.grad = None
    loss = 0.0
    for i in range(x.shape[0]):
        loss = loss + ((_forward(params, x[i : i + 1]) - y[i : i + 1]) ** 2).mean()
    loss = loss / x.shape[0]
    loss.backward()
    total = 0.0
    for p in params:
        total += p.grad.pow(2).sum().item()
    scale = min(1.0, MAX_NORM / (total**0.5 + 1e-6))
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad, alpha=scale)
            p.sub_(m, alpha=LR)
    return loss.detach()


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    """The run in float64 on the CPU, batched (the same arithmetic as the slow step): the loss
    of every step and the weights at the end."""
    import torch

    params = [torch.from_numpy(w).double().requires_grad_() for w in case.args["weights"]]
    momenta = [torch.zeros_like(p) for p in params]
    losses = []
    for x, y in case.args["batches"]:
        xt, yt = torch.from_numpy(x).double(), torch.from_numpy(y).double()
        for p in params:
            p.grad = None
        loss = ((_forward(params, xt) - yt) ** 2).mean()
        loss.backward()
        norm = torch.sqrt(sum((p.grad**2).sum() for p in params))
        scale = min(1.0, MAX_NORM / (float(norm) + 1e-6))
        with torch.no_grad():
            for p, m in zip(params, momenta, strict=True):
                m.mul_(MOMENTUM).add_(p.grad, alpha=scale)
                p.sub_(m, alpha=LR)
        losses.append(float(loss.detach()))
    return {"losses": losses, "weights": [p.detach().numpy() for p in params]}


def _on_device(case: api.Case, device: Any) -> tuple[list[Any], list[Any], list[tuple[Any, Any]]]:
    import torch

    # Copies (torch.tensor), never views of the case's arrays: on a CPU, from_numpy().to("cpu")
    # would share them, and the slow step's updates would land in the learner's weights.
    params = [torch.tensor(w, device=device).requires_grad_() for w in case.args["weights"]]
    momenta = [torch.zeros_like(p) for p in params]
    batches = [
        (torch.tensor(x, device=device), torch.tensor(y, device=device))
        for x, y in case.args["batches"]
    ]
    return params, momenta, batches


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


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    import torch

    device = torch.device(ctx.device)
    params, momenta, batches = _on_device(case, device)
    losses: list[float] = []
    kept = [(x.clone(), y.clone()) for x, y in batches]

    def step(i: int, call: Any = fn) -> None:
        x, y = batches[i]
        before = [p.detach().clone() for p in params]
        losses.append(_loss_value(call(params, momenta, x, y), i))
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
        # The profiled and timed steps call your function itself: the grader's watch around
        # each call synchronizes after it, which the profile would count as your step's.
        inner = inspect.unwrap(fn)
        source = _source(fn)
        returned: list[Any] = []

        def yours(i: int) -> None:
            x, y = batches[i]
            returned.append(inner(params, momenta, x, y))

        trace = st.profile_steps(lambda i: yours(WARM + i), PROFILED, gpu=ctx.gpu)
        # Where the reads come from, from one more step with Python's calls recorded (they
        # cost the profile far more than the operators do: only when there is a read to find)
        if trace.readbacks:
            trace.lines = st.profile_steps(
                lambda i: yours(WARM + PROFILED), 1, gpu=ctx.gpu, source=source
            ).lines
        else:
            yours(WARM + PROFILED)
        slow_p, slow_m, _ = _on_device(case, device)
        slow_losses: list[Any] = []

        def slow(i: int) -> None:
            x, y = batches[i]
            slow_losses.append(_slow_step(slow_p, slow_m, x, y))

        for i in range(WARM):
            slow(i)
        slow_trace = st.profile_steps(lambda i: slow(WARM + i), 1, gpu=ctx.gpu)
        # Our step on its own copy of the weights, profiled and timed like yours: what the fix
        # saves on this device is read from it, not from a constant
        ref_p, ref_m, _ = _on_device(case, device)
        mine = inspect.unwrap(ctx.reference())

        def ours(i: int) -> None:
            x, y = batches[i]
            mine(ref_p, ref_m, x, y)

        for i in range(WARM):
            ours(i)
        ours_trace = st.profile_steps(lambda i: ours(WARM + i), 1, gpu=ctx.gpu)
        out["trace"], out["slow_trace"] = trace.to_dict(), slow_trace.to_dict()
        out["ours_trace"] = ours_trace.to_dict()
        out["table"] = st.table(trace)
        if ctx.gpu:
            # Each goes on with the batches after the ones it has used: the slow step profiled
            # one step, yours PROFILED.
            timed = st.time_steps(
                {
                    "slow": lambda i: slow(WARM + 1 + i),
                    "yours": lambda i: yours(WARM + PROFILED + 1 + i),
                    "ours": lambda i: ours(WARM + 1 + i),
                },
                gpu=True,
                rounds=ROUNDS,
                per_round=PER_ROUND,
            )
            out["timing"] = timed
        for i, got in enumerate(returned):
            losses.append(_loss_value(got, WARM + i))
    for i, ((x, y), (kx, ky)) in enumerate(zip(batches, kept, strict=True)):
        if not (torch.equal(x, kx) and torch.equal(y, ky)):
            raise api.CheckError(f"train_step changed its input x or y (batch {i}): leave them")
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
    if ctx.gpu and t["syncs"]:
        calls = ", ".join(f"{k} x{v / t['steps']:.3g}" for k, v in sorted(t["sync_calls"].items()))
        return api.Mismatch(
            f"your step waits for the GPU {t['syncs']:.3g} times per step ({calls}; "
            f"{t['readbacks']:.3g} aten::_local_scalar_dense{where}): a Python number read from "
            "a GPU tensor (.item(), float(), min(), if t:) stops the host until the GPU is "
            "done. Keep the clipping's norm a tensor",
            expected=0,
            got=t["syncs"],
        )
    if not ctx.gpu and t["readbacks"]:
        return api.Mismatch(
            f"your step reads {t['readbacks']:.3g} Python number(s) from tensors per step "
            f"(.item(), float(t), .tolist(), .numpy() and their kin{where}); on a GPU each is a "
            "device sync: keep the clipping's norm a tensor",
            expected=0,
            got=t["readbacks"],
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
            "saves): a Python loop over the rows launches the same few small kernels again for "
            "every row, forward and backward. Compute the whole batch at once",
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
