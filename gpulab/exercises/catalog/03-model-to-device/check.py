"""Check for model-to-device: run a model over batches on a device, without a device mismatch.

The check builds a small MLP and its batches on the CPU, as a data loader would, and asks for
the worker's device. On a machine without a GPU it first asks for PyTorch's meta device (shapes,
no data): a model or a batch left on the CPU then raises the same kind of same-device error a
GPU would, so the exercise teaches the fix on any machine.

The model has batch norm (running statistics far from any batch's own) and dropout, built in
training mode as a fresh model is, so inference without model.eval() gives other answers and is
named; the comparison is float32-tight (TF32 off around the call), and parameters or outputs in
float16/bfloat16 are named too. The batches and the list holding them must come back unchanged.

Where the model ran is read from what torch dispatched during the call (a TorchDispatchMode the
check enters around it, at the level of the ATen operators): every operator that computed a
tensor did it on the device, none recorded an autograd graph, and each Linear layer's weight, as
the model holds it afterwards, took part in matrix products over every batch's rows there. Hooks
on the model cannot say this: the learner's code holds the model, so it can take the hooks out
and call them with tensors made on the device (a red team's shortcut did, and passed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "predict"
D_IN, HIDDEN, D_OUT = 16, 64, 3
DROPOUT = 0.5
BN_EPS = 1e-5
# float32 all the way (the check turns TF32 off around the call): a float16 or bfloat16 model
# misses this by orders of magnitude, float32 in any summation order does not.
RTOL, ATOL = 1e-4, 1e-5


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    return {
        "w1": w(HIDDEN, D_IN),
        "b1": w(HIDDEN),
        # batch norm's learned scale and shift, and the running statistics an eval() uses (far
        # from a batch's own: a model left in training mode normalizes by the batch instead)
        "gamma": rng.uniform(0.5, 2.0, HIDDEN).astype(np.float32),
        "beta": rng.uniform(-0.5, 0.5, HIDDEN).astype(np.float32),
        "mean": rng.uniform(-1.0, 1.0, HIDDEN).astype(np.float32),
        "var": rng.uniform(0.5, 4.0, HIDDEN).astype(np.float32),
        "w2": w(D_OUT, HIDDEN),
        "b2": w(D_OUT),
    }


def _batches(rng: np.random.Generator, sizes: list[int]) -> list[np.ndarray]:
    # Both signs, a few large values, never zero.
    out = []
    for b in sizes:
        x = rng.uniform(0.1, 2.0, (b, D_IN)) * rng.choice([-1.0, 1.0], (b, D_IN))
        x[rng.random((b, D_IN)) < 0.02] *= 50.0
        out.append(x.astype(np.float32))
    return out


def cases(ctx: api.Context) -> list[api.Case]:
    rng = ctx.rng
    plans = [[1], [2, 31], [33, 1023, 1025]]
    devices = [ctx.device] * len(plans)
    if not ctx.gpu:
        # Without a GPU, meta is the "other" device, and goes first so the starter fails with a
        # device mismatch as it does on a GPU. Only then: its first use in a process imports a
        # large part of torch (seconds).
        plans.insert(0, [5, 7, 9])
        devices.insert(0, "meta")
    # A realistic batch size; no speed is graded here, so nothing needs to fill the device.
    big = ctx.big(4 * D_IN, cap=1 << 14)
    plans.append([big // 4] * 4)
    devices.append(ctx.device)
    return [
        api.Case(
            f"{len(sizes)} batch(es) of {'/'.join(map(str, sizes))} rows, device={dev!r}",
            {"weights": _weights(rng), "batches": _batches(rng, sizes), "device": dev},
        )
        for sizes, dev in zip(plans, devices, strict=True)
    ]


def expected(case: api.Case, ctx: api.Context) -> list[np.ndarray]:
    """The model in eval mode, in float64: batch norm by its running statistics, no dropout."""
    w = {k: v.astype(np.float64) for k, v in case.args["weights"].items()}
    outs = []
    for x in case.args["batches"]:
        h = x.astype(np.float64) @ w["w1"].T + w["b1"]
        h = (h - w["mean"]) / np.sqrt(w["var"] + BN_EPS) * w["gamma"] + w["beta"]
        outs.append(np.tanh(h) @ w["w2"].T + w["b2"])
    return outs


def _model(weights: dict[str, np.ndarray]) -> Any:
    import torch

    model = torch.nn.Sequential(
        torch.nn.Linear(D_IN, HIDDEN),
        torch.nn.BatchNorm1d(HIDDEN, eps=BN_EPS),
        torch.nn.Tanh(),
        torch.nn.Dropout(DROPOUT),
        torch.nn.Linear(HIDDEN, D_OUT),
    )
    with torch.no_grad():
        for layer, (w, b) in ((model[0], ("w1", "b1")), (model[4], ("w2", "b2"))):
            layer.weight.copy_(torch.from_numpy(weights[w]))
            layer.bias.copy_(torch.from_numpy(weights[b]))
        bn = model[1]
        bn.weight.copy_(torch.from_numpy(weights["gamma"]))
        bn.bias.copy_(torch.from_numpy(weights["beta"]))
        bn.running_mean.copy_(torch.from_numpy(weights["mean"]))
        bn.running_var.copy_(torch.from_numpy(weights["var"]))
    return model  # in training mode, as a freshly built model is


@contextlib.contextmanager
def _full_float32() -> Iterator[None]:
    """TF32 off for the call (another experiment in this worker may have turned it on)."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _same(a: Any, b: Any) -> bool:
    return a.type == b.type and (a.index or 0) == (b.index or 0)


# Operators that copy, allocate or pin: where they ran says where data went, not where the model
# ran (a batch's copy to the device runs as one, copy.deepcopy as set_; views are told by their
# schema, and an operator with no tensor input, a factory, computed nothing from the data)
_MOVES = frozenset(
    {
        "aten._to_copy",
        "aten.set_",
        "aten.resize_",
        "aten.copy_",
        "aten._copy_from",
        "aten._copy_from_and_resize",
        "aten._pin_memory",
        "aten.clone",
        "aten.cat",
        "aten.stack",
        "aten.empty",
        "aten.empty_like",
        "aten.empty_strided",
        "aten.lift_fresh",
        "aten.lift_fresh_copy",
    }
)
# The products a Linear layer becomes (aten.linear itself under inference_mode)
_PRODUCTS = frozenset({"aten.addmm", "aten.mm", "aten.linear", "aten.matmul", "aten.bmm"})


class _Ran:
    """What the learner's call computed, as torch dispatched it: the first operator that ran
    off the device (name, device), the first that recorded an autograd graph, and each matrix
    product's operands' storages (kept alive, so an identity read later is not a reused
    address) with the rows of its output per weight row."""

    def __init__(self) -> None:
        self.elsewhere: tuple[str, Any] | None = None
        self.graph: str | None = None
        self.products: list[tuple[list[Any], int]] = []

    def rows(self, weight: Any) -> int:
        """The rows the matrix products that took `weight` (by its storage) produced."""
        mine = weight.untyped_storage()._cdata
        out_features = int(weight.shape[0])
        return sum(
            n // out_features
            for storages, n in self.products
            if any(st._cdata == mine for st in storages)
        )


@contextlib.contextmanager
def _watching(device: Any) -> Iterator[_Ran]:
    """The call's ATen operators, read as they run: the record is the check's own, filled by the
    dispatcher, so nothing the learner's code holds (the model, its hooks) can write to it."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    ran = _Ran()

    def tensors(values: Any) -> list[Any]:
        flat = values if isinstance(values, (tuple, list)) else (values,)
        return [t for t in flat if isinstance(t, torch.Tensor)]

    class _Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = str(func.overloadpacket)
            if func.is_view or name in _MOVES:
                return out
            ins = tensors(args) + tensors(list(kwargs.values()))
            outs = [t for t in tensors(out) if t.dim() > 0]
            away = next((t.device for t in outs if not _same(t.device, device)), None)
            if not ins:
                away = None
            if away is not None and ran.elsewhere is None:
                ran.elsewhere = (name, away)
            if ran.graph is None and torch.is_grad_enabled() and any(t.requires_grad for t in ins):
                ran.graph = name
            if name in _PRODUCTS and outs and away is None:
                ran.products.append(([t.untyped_storage() for t in ins], outs[0].numel()))
            return out

    with _Seen():
        yield ran


@contextlib.contextmanager
def _reads() -> Iterator[list[str]]:
    """The names of the calls inside the block that hand a tensor's data to Python or NumPy
    (gpulab.core.step_trace's reads and exits). A lone integer or bool is no data: a
    DataLoader draws its workers' seed with .item() (right/loader-with-workers.py)."""
    import torch
    from torch.overrides import TorchFunctionMode, resolve_name

    from gpulab.core.step_trace import PYTHON_READS, python_exits

    seen: list[str] = []

    def data(t: Any) -> bool:
        if not isinstance(t, torch.Tensor):
            return False
        return t.is_floating_point() or t.is_complex() or t.numel() > 1

    class _Reads(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            if resolve_name(func) in PYTHON_READS and args and data(args[0]):
                seen.append(str(resolve_name(func)))
            return func(*args, **(kwargs or {}))

    with _Reads(), python_exits(seen.append, summarized=True):
        yield seen


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    import torch

    device = torch.device(case.args["device"])
    model = _model(case.args["weights"])  # on the CPU, as a freshly built model is
    batches = [torch.from_numpy(x.copy()) for x in case.args["batches"]]  # CPU, as a loader gives
    given = list(batches)
    try:
        with _full_float32(), _watching(device) as ran, _reads() as reads:
            outs = fn(model, batches, device)
    except Exception as exc:  # a device error, with what to look for
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        why = ""
        if "same device" in text or ("device" in text and "expected" in text):
            why = "a tensor on the wrong device (move the model and every batch): "
        elif "meta tensor" in text:
            why = "an output was copied back to the CPU (.cpu(), .item(), .numpy()): "
        elif "more than 1 value per channel when training" in text:
            why = "the model ran in training mode: call model.eval() for inference: "
        else:
            raise  # any other error: the grader names it and the learner's line
        raise api.CheckError(f"device={str(device)!r}: {why}{type(exc).__name__}: {text}") from None
    # the count first: a batch left out is the plainer mistake (it may leave no layer run)
    if not isinstance(outs, (list, tuple)):
        raise api.CheckError(f"predict returned {type(outs).__name__}, expected a list of tensors")
    if len(outs) != len(batches):
        raise api.CheckError(f"predict returned {len(outs)} outputs for {len(batches)} batches")
    if reads:
        # NumPy's work is no operator the dispatcher sees: a red team's predict read the
        # weights and each batch into NumPy (.numpy()), ran the forward there, moved the
        # outputs to the device, and ran each Linear's weight through a product on the device
        # over an empty input of every batch's size, only to be seen (pass)
        raise api.CheckError(
            f"predict read tensor values into Python or NumPy ({reads[0]}, {len(reads)} "
            f"time(s)): a forward computed there is not on {device}, and on a GPU each read "
            "waits for it; run the model on the device and leave its outputs there"
        )
    if ran.elsewhere is not None:
        op, where = ran.elsewhere
        raise api.CheckError(
            f"the model ran a forward pass on {where}, not on {device} ({op} computed there): "
            "move the model and each batch to the device before the forward, not the outputs "
            "after it"
        )
    if ran.graph is not None:
        raise api.CheckError(
            f"the forward pass recorded an autograd graph ({ran.graph} on tensors that require "
            "grad; detaching the outputs after does not undo its cost): run inference under "
            "torch.no_grad() or torch.inference_mode()"
        )
    for i, (now, before, host) in enumerate(zip(batches, given, case.args["batches"], strict=True)):
        if now is not before:
            raise api.CheckError(
                f"predict replaced batch {i} in the list it was given: leave the caller's "
                "list as it is (build a new one for the device copies)"
            )
        if not torch.equal(before, torch.from_numpy(host)):
            raise api.CheckError(
                f"predict changed the values of batch {i}: leave the inputs as they are"
            )
    for name, p in model.named_parameters():
        if not _same(p.device, device):
            raise api.CheckError(
                f"the model's parameter {name} is on {p.device}, expected {device} "
                "(move the model you were given: Module.to works in place)"
            )
    if model.training:
        raise api.CheckError(
            "the model is still in training mode: call model.eval() before inference (its "
            "dropout and batch norm layers behave differently while training)"
        )
    for name, p in model.named_parameters():
        if p.dtype != torch.float32:
            raise api.CheckError(
                f"the model's parameter {name} is {p.dtype}: keep the model in float32 "
                "(model.half() or .to(torch.bfloat16) changes the answers; this exercise is "
                "about where tensors live, not their precision)"
            )
    # after the parameters' own checks: a moved copy of the model is named as such first
    rows = sum(int(b.shape[0]) for b in batches)
    linears = [(i, m) for i, m in enumerate(model) if isinstance(m, torch.nn.Linear)]
    seen = [(i, ran.rows(m.weight)) for i, m in linears]
    short = [(i, got) for i, got in seen if got < rows]
    if short:
        i, got = short[0]
        raise api.CheckError(
            f"{len(short)} of the model's {len(linears)} Linear layers did not run on {device} "
            f"over every batch (layer {i}'s weight took part in products over {got} of the "
            f"{rows} rows there): call model(batch) with the model and each batch on the device"
        )
    for i, out in enumerate(outs):
        if not isinstance(out, torch.Tensor):
            raise api.CheckError(f"output {i} is a {type(out).__name__}, not a tensor")
        if not _same(out.device, device):
            where = " (leave outputs on the device: copying back to the CPU costs a sync)"
            raise api.CheckError(
                f"output {i} is on {out.device}, expected {device}"
                + (where if out.device.type == "cpu" else "")
            )
        if out.dtype != torch.float32:
            raise api.CheckError(f"output {i} is {out.dtype}, expected torch.float32")
        if out.requires_grad:
            raise api.CheckError(
                f"output {i} requires grad: run inference under torch.no_grad() so no graph "
                "is kept alive"
            )
    if device.type == "meta":
        return [tuple(o.shape) for o in outs]
    return [o.detach().cpu().numpy() for o in outs]


def compare(want: list, got: list, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        if isinstance(g, tuple):  # the meta case: shapes only
            if g != w.shape:
                return api.Mismatch(f"output {i} has shape {g}, expected {w.shape}")
            continue
        bad = api.compare_arrays(w, g, name=f"output {i}", rtol=RTOL, atol=ATOL)
        if bad is not None:
            return bad
    return None
