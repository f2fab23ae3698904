"""Check for mixed-precision: one training step with torch.autocast (float16) and a GradScaler.

The check builds a small MLP and a regression batch, and calls the learner's step STEPS times
with a scaler that counts its calls. After every step it verifies that every matrix product ran
in float16 (read as torch dispatched them), that scale, step and update were each called once,
that the step was not skipped, and that the returned loss follows a float64 reference training run of the same
model (plain SGD, no autocast) computed before the learner's code was loaded, and that x and y
are unchanged. Before each step the check turns whatever gradients the previous step left into
NaN, as stale values: a step that adds to them finds inf/NaN and is skipped by the scaler. A
step that zeroes the gradients at its start, or after its update (optimizer.zero_grad() last,
as lesson 13 shows; None or zeros are left alone), passes.

It runs on the CPU too (autocast supports float16 there); only the speed comparison against
the same step in float32 needs a GPU.

The dtypes are read from a TorchDispatchMode around every call of the learner's step, checked and
timed alike (the yardstick's too, through the same timing()): each ATen matrix product's operand
dtypes and its flops, into a record the check holds. Forward hooks on the model could not say
it: the learner's code holds the model, so it can take the hooks out, run the step in float32
and call them with float16 tensors it made (a red team's shortcut did, and graded gold at 11x
on a CPU, where float32 is the fast path). The float16 products must also add up to a forward
and every weight's gradient over the whole batch, so products run only to be seen cost the
step's own work.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "train_step"
STEPS = 30
LR = 0.1
MOMENTUM = 0.9
SIZES = (32, 64, 64, 8)
BATCH = 256
LOSS_RTOL = 0.05  # float16 forward passes drift from the float64 run by well under 1%


@contextlib.contextmanager
def _small_work(device: str) -> Iterator[None]:
    """One CPU thread for these tiny matmuls: on a busy machine, threads fighting over a few
    cores make them tens of times slower, not faster."""
    import torch

    if not device.startswith("cpu"):
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# The ATen matrix products a Linear layer, its backward or a hand-written matmul become
_PRODUCTS = frozenset(
    {
        "aten.addmm",
        "aten.mm",
        "aten.bmm",
        "aten.baddbmm",
        "aten.addbmm",
        "aten._addmm_activation",
        "aten.linear",
        "aten.matmul",
        "aten.addmv",
        "aten.mv",
        "aten.dot",
        "aten.vdot",
    }
)


class _Products:
    """The matrix products one call ran, as torch dispatched them: float16 flops, and the first
    product in another dtype (its operator, dtype and operand shapes)."""

    def __init__(self) -> None:
        self.half = 0
        self.other: tuple[str, Any, str] | None = None

    def clear(self) -> None:
        """Start a call's record."""
        self.half = 0
        self.other = None


# Products by another name: a red team ran each Linear as a 1x1 conv1d in float32 (not a matrix
# product by the list above) while float16 products made on the meta device (shapes, no data,
# no cost) stood in for the step's. A convolution must be float16 too; a product off the data's
# device counts for nothing
_CONVOLUTIONS = frozenset(
    {
        "aten.convolution",
        "aten._convolution",
        "aten.convolution_backward",
        "aten.cudnn_convolution",
        "aten.mkldnn_convolution",
        "aten._slow_conv2d_forward",
    }
)


# The products whose reduced dimension is in their second operand (the first is what is added)
_ADDED_TO = frozenset(
    {"aten.addmm", "aten.baddbmm", "aten.addbmm", "aten._addmm_activation", "aten.addmv"}
)


def _watcher(products: _Products) -> Any:
    """A function that calls fn(*args) with its matrix products recorded into `products`, by a
    TorchDispatchMode only the check holds (the autograd engine carries it into the backward's
    threads); the mode's class is made once, not per call."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            name = str(func.overloadpacket)
            if name in _CONVOLUTIONS:
                ins = [a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
                odd = next((a.dtype for a in ins if a.dtype != torch.float16), None)
                if odd is not None and products.other is None:
                    shapes = " by ".join("x".join(map(str, a.shape)) for a in ins)
                    products.other = (name, odd, shapes)
                return out
            if name not in _PRODUCTS or not isinstance(out, torch.Tensor):
                return out
            if out.device.type == "meta":  # shapes only: no work was done
                return out
            ins = [a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
            reduced = args[1] if name in _ADDED_TO else args[0]
            width = int(out.shape[-1]) if out.dim() >= 2 else 1
            odd = next((a.dtype for a in ins if a.dtype != torch.float16), None)
            if odd is None:
                products.half += 2 * int(reduced.numel()) * width
            elif products.other is None:
                shapes = " by ".join("x".join(map(str, a.shape)) for a in ins)
                products.other = (name, odd, shapes)
            return out

    def watched(fn: Any, *args: Any) -> Any:
        with _Seen():
            return fn(*args)

    return watched


def _least_flops(batch: int, weights: list[int]) -> int:
    """The float16 product flops a step over `batch` rows cannot do without: each layer's
    forward and weight gradient, and the gradient every layer but the first hands back to the
    one before (two flops per weight per row each). A red team's timed step fed the first
    layer a made-up upstream gradient instead of the second layer's, a fifth of the products
    fewer, and passed (every weight still changed)."""
    return 4 * batch * sum(weights) + 2 * batch * sum(weights[1:])


def _half_wrong(products: _Products, need: int) -> str:
    """What the recorded products say is wrong with a step that must run every product in
    float16 and at least `need` flops of them (a forward and the weights' gradients)."""
    if products.other is not None:
        name, dtype, shapes = products.other
        return (
            f"a matrix product ran in {dtype} inside the training step ({name} on {shapes}): "
            "run the forward pass under torch.autocast(device_type, dtype=torch.float16)"
        )
    if products.half == 0:
        return "no matrix product ran in the step: the model was never called"
    if products.half < need:
        return (
            f"the step's float16 matrix products came to {products.half:,} flops, fewer than "
            f"the {need:,} that a forward, every weight's gradient and the gradient each layer "
            "hands back to the one before take over the whole batch: train on the whole batch, "
            "forward and backward, every layer"
        )
    return ""


def _weights(rng: np.random.Generator, sizes: tuple[int, ...]) -> list[np.ndarray]:
    out = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        out.append(rng.uniform(-1, 1, (fan_out, fan_in)) / np.sqrt(fan_in))
        out.append(rng.uniform(-0.1, 0.1, fan_out))
    return out


def cases(ctx: api.Context) -> list[api.Case]:
    rng = ctx.rng
    out = []
    for k in range(2):
        x = rng.standard_normal((BATCH, SIZES[0]))
        teacher = rng.standard_normal((SIZES[0], SIZES[-1])) / np.sqrt(SIZES[0])
        y = 3.0 * np.tanh(x @ teacher) + 0.5  # an offset, so the loss starts well above zero
        out.append(
            api.Case(
                f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, {STEPS} steps (run {k + 1})",
                {
                    "x": x.astype(np.float32),
                    "y": y.astype(np.float32),
                    "weights": [w.astype(np.float32) for w in _weights(rng, SIZES)],
                },
            )
        )
    return out


def _device_model(width: int, depth: int, device: Any, seed: int) -> Any:
    """The timing's MLP, its weights drawn on the device: the check builds one for the learner
    and one for its yardstick, and weights drawn in float64 NumPy and copied over took 1.8 s of
    a check on an H100 (the correctness cases keep _model's exact weights)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    layers: list[Any] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width, device="meta"), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to_empty(device=device)
    with torch.no_grad():
        for m in model:
            if isinstance(m, torch.nn.Linear):
                m.weight.uniform_(-1, 1, generator=gen).div_(float(np.sqrt(width)))
                m.bias.uniform_(-0.1, 0.1, generator=gen)
    return model


def _model(weights: list[np.ndarray], dtype: Any, device: Any) -> Any:
    import torch

    layers: list[Any] = []
    for i in range(0, len(weights), 2):
        lin = torch.nn.Linear(weights[i].shape[1], weights[i].shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(weights[i]))
            lin.bias.copy_(torch.from_numpy(weights[i + 1]))
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1]).to(device=device, dtype=dtype)


def expected(case: api.Case, ctx: api.Context) -> list[float]:
    """The loss before each of STEPS plain-SGD steps, in float64 on the CPU."""
    import torch

    model = _model(case.args["weights"], torch.float64, "cpu")
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x = torch.from_numpy(case.args["x"]).double()
    y = torch.from_numpy(case.args["y"]).double()
    losses = []
    with _small_work("cpu"):
        for _ in range(STEPS):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    return losses


def _spy_scaler(device_type: str) -> Any:
    import torch

    counts = {"scale": 0, "step": 0, "update": 0}  # out of the learner's reach: no attribute
    start = [0.0]  # the loss scale as the step began

    class SpyScaler(torch.amp.GradScaler):
        """A GradScaler that counts the calls the learner makes; `calls` is a copy of the
        counts (writing to it changes nothing), `reset_calls()` starts a call's count."""

        def __init__(self) -> None:
            super().__init__(device_type, init_scale=2.0**12)

        @property
        def calls(self) -> dict[str, int]:
            return dict(counts)

        def reset_calls(self) -> None:
            for key in counts:
                counts[key] = 0
            start[0] = float(self.get_scale())

        def scale_wrong(self) -> str:
            """The loss scale a step left, if no GradScaler update makes it from the one it
            found: `scaler.update(1.0)` (a new scale of the learner's) passed every case with
            every later backward unscaled, the float16 gradients' underflow the scaler is for
            left as it is. Its own update keeps the scale, halves it after an overflow, or
            doubles it after growth_interval clean steps."""
            was, now = start[0], float(self.get_scale())
            if self.is_enabled() and now in (was, was * 0.5, was * 2.0):
                return ""
            return (
                f"the loss scale went from {was:g} to {now:g} in one step (a scale of your own, "
                "scaler.update(new_scale) or a write to the scaler): call scaler.update() and "
                "let the scaler set it; the scaler skipped leaves small float16 gradients to "
                "underflow"
            )

        def scale(self, outputs: Any) -> Any:
            counts["scale"] += 1
            return super().scale(outputs)

        def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            counts["step"] += 1
            return super().step(optimizer, *args, **kwargs)

        def update(self, new_scale: Any = None) -> None:
            counts["update"] += 1
            super().update(new_scale)

    return SpyScaler()


_NEEDED = (
    ("scale", "scaler.scale(loss).backward() (backward on the scaled loss)"),
    ("step", "scaler.step(optimizer) (instead of optimizer.step())"),
    ("update", "scaler.update() (after scaler.step)"),
)


def _missing_calls(calls: dict[str, int]) -> str:
    for key, what in _NEEDED:
        if calls[key] != 1:
            return f"{what} was called {calls[key]} times in one step, expected once"
    return ""


def run(fn: Any, case: api.Case, ctx: api.Context) -> list[float]:
    import torch

    device = torch.device(ctx.device)
    model = _model(case.args["weights"], torch.float32, device)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    scaler = _spy_scaler(device.type)
    x = torch.from_numpy(case.args["x"]).to(device)
    y = torch.from_numpy(case.args["y"]).to(device)
    products = _Products()
    with _small_work(ctx.device):
        return _steps(fn, model, opt, scaler, x, y, products)


def _steps(
    fn: Any, model: Any, opt: Any, scaler: Any, x: Any, y: Any, products: _Products
) -> list[float]:
    import torch

    need = _least_flops(
        int(x.shape[0]), [a * b for a, b in zip(SIZES[:-1], SIZES[1:], strict=True)]
    )
    watched = _watcher(products)
    losses = []
    keep_x, keep_y = x.clone(), y.clone()
    for step in range(STEPS):
        # Stale gradients, where the previous step left some: NaN instead of the old values, so
        # a step that adds to them is skipped by the scaler. A step that zeroed them at its end
        # (optimizer.zero_grad() after the update, as lesson 13 shows) left None or zeros, and
        # those stay as they are: they are what the next step really starts from.
        for p in model.parameters():
            if p.grad is not None and bool(p.grad.ne(0).any()):
                p.grad = torch.full_like(p, float("nan"))
        before = [p.detach().clone() for p in model.parameters()]
        products.clear()
        scaler.reset_calls()
        try:
            loss = watched(fn, model, opt, scaler, x, y)
        except Exception as exc:
            missing = _missing_calls(scaler.calls)
            if not missing:
                raise  # the grader names the error and the learner's line
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise api.CheckError(f"step {step}: {missing}; {type(exc).__name__}: {text}") from None
        missing = _missing_calls(scaler.calls) or scaler.scale_wrong()
        if missing:
            raise api.CheckError(f"step {step}: {missing}")
        wrong = _half_wrong(products, need)
        if wrong:
            raise api.CheckError(f"step {step}: {wrong}")
        for name, now, kept in (("x", x, keep_x), ("y", y, keep_y)):
            if not torch.equal(now, kept):
                raise api.CheckError(f"step {step}: train_step changed its input {name}")
        if all(torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True)):
            raise api.CheckError(
                f"step {step}: the optimizer step was skipped because the gradients held "
                "inf/NaN: the previous step's gradients were still there. Zero them every "
                "step (optimizer.zero_grad(), at the start of the step or after the update)"
            )
        if isinstance(loss, torch.Tensor):
            raise api.CheckError(
                f"step {step}: train_step returned a tensor; return loss.item(), a float"
            )
        if not isinstance(loss, (int, float)) or isinstance(loss, bool):
            raise api.CheckError(f"step {step}: train_step returned {type(loss).__name__}")
        losses.append(float(loss))  # a Python float, checked above
    return losses


def compare(
    want: list[float], got: list[float], case: api.Case, ctx: api.Context
) -> api.Mismatch | None:
    for step, (w, g) in enumerate(zip(want, got, strict=True)):
        if not abs(g - w) <= LOSS_RTOL * abs(w):
            return api.Mismatch(
                f"the loss returned at step {step} is {g:.6g}, but the same training in float64 "
                f"has {w:.6g} there (return the unscaled loss, before the step)",
                index=step,
                expected=w,
                got=g,
                max_error=abs(g - w),
            )
    if not got[-1] < 0.5 * got[0]:
        return api.Mismatch(f"the loss did not decrease: {got[0]:.4g} -> {got[-1]:.4g}")
    return None


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import torch

    device = torch.device(ctx.device)
    if ctx.gpu:
        width, depth, batch = (1024, 3, 2048) if ctx.quick else (4096, 4, 8192)
    else:  # float16 on a CPU is no faster than float32: the figure says so
        width, depth, batch = 256, 2, 512
    amp_model = _device_model(width, depth, device, ctx.seed)
    ref_model = copy.deepcopy(amp_model)
    amp_opt = torch.optim.SGD(amp_model.parameters(), lr=1e-4)
    ref_opt = torch.optim.SGD(ref_model.parameters(), lr=1e-4)
    # The same counting scaler as the checked steps: a timed call cannot tell it is timed by the
    # scaler it is given, and each one is checked to have made the whole step
    scaler = _spy_scaler(device.type)
    gen = torch.Generator(device=device).manual_seed(ctx.seed)
    products = _Products()
    watched = _watcher(products)
    linears = [m for m in amp_model if isinstance(m, torch.nn.Linear)]
    # samples each Linear layer saw forward and backward, this call: every layer, not the first
    # alone (a timed step that runs the counted layer whole and the rest on a row is not a step)
    rows = {(i, way): 0 for i in range(len(linears)) for way in ("forward", "backward")}
    for i, m in enumerate(linears):

        def count_forward(_m: Any, inputs: Any, _out: Any, i: int = i) -> None:
            rows[i, "forward"] += int(inputs[0].shape[0])

        def count_backward(_m: Any, _grad_in: Any, grad_out: Any, i: int = i) -> None:
            rows[i, "backward"] += int(grad_out[0].shape[0])

        m.register_forward_hook(count_forward)
        m.register_full_backward_hook(count_backward)

    # Each layer's weight as the call found it: a step trains every weight, and a timed step
    # that froze them (no weight gradient, a third of the flops) leaves them as they were
    before: list[Any] = []

    def prepare(s: Any) -> None:
        products.clear()
        scaler.reset_calls()
        for key in rows:
            rows[key] = 0
        before[:] = [m.weight.detach().clone() for m in linears]

    def check_call(s: Any, returned: Any) -> str | None:
        missing = _missing_calls(scaler.calls) or scaler.scale_wrong()
        if missing:
            return missing
        if products.other is not None or not products.half:
            return _half_wrong(products, 0)
        # What the step trained on, read from the model itself: the whole batch, forward and
        # backward, once, through every layer (a quarter of it, a backward through a zero loss,
        # or layers past the first run on a row, is not the step)
        for (i, _way), n in rows.items():
            if n != batch:
                fwd, bwd = rows[i, "forward"], rows[i, "backward"]
                where = "the step's first layer" if i == 0 else f"layer {i + 1} of the step"
                return (
                    f"{where} saw {fwd} samples forward and {bwd} backward, not the batch's "
                    f"{batch} once each: train on the whole batch, forward and backward, every "
                    "layer, every call"
                )
        for i, (m, was) in enumerate(zip(linears, before, strict=True)):
            if torch.equal(m.weight.detach(), was):
                where = "the step's first layer" if i == 0 else f"layer {i + 1} of the step"
                return (
                    f"{where}'s weight did not change in this call: the step must compute "
                    "every weight's gradient and update it (frozen or skipped weights are not "
                    "the step)"
                )
        # last: the hooks above name the plainer mistakes, and this holds where they were
        # called by hand (the products are the step's own work, whoever can reach the model)
        return _half_wrong(products, _least_flops(batch, [width * width] * depth)) or None

    def setup(i: int) -> Any:
        x = torch.randn(batch, width, device=device, generator=gen)
        return x, torch.tanh(x)

    def fp32_step(s: Any) -> float:
        ref_opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ref_model(s[0]), s[1])
        loss.backward()
        ref_opt.step()
        return loss.item()

    return api.TimingSpec(
        setup=setup,
        learner=lambda s: watched(fn, amp_model, amp_opt, scaler, s[0], s[1]),
        library=fp32_step,
        library_name="the same step in float32 (no autocast, no scaler)",
        work=6.0 * batch * width * width * depth,
        metric="TFLOP/s",
        # The roof is the device's float16 matmul; a CPU has none calibrated, so its float32 one.
        ceiling="matmul:fp16" if ctx.gpu else "matmul:fp32",
        sync="torch" if ctx.gpu else "none",
        sets=2,
        prepare=prepare,
        check_call=check_call,
        # counts from hooks and the products' record: every timed call is checked, on a CPU too
        check_every=True,
        note=f"MLP {depth} x {width}x{width}, batch {batch}: 6 flops per weight per sample "
        "(forward 2, backward 4)",
    )
