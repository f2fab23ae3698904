"""Check for model-to-device: run a model over batches on a device, without a device mismatch.

The check builds a small MLP and its batches on the CPU, as a data loader would, and asks for
the worker's device. On a machine without a GPU it first asks for PyTorch's meta device (shapes,
no data): a model or a batch left on the CPU then raises the same kind of same-device error a
GPU would, so the exercise teaches the fix on any machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "predict"
D_IN, HIDDEN, D_OUT = 16, 64, 3
# Loose enough for TF32 matmuls if the worker enabled them: this exercise is about devices.
RTOL = ATOL = 5e-3


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    return {"w1": w(HIDDEN, D_IN), "b1": w(HIDDEN), "w2": w(D_OUT, HIDDEN), "b2": w(D_OUT)}


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
    w = {k: v.astype(np.float64) for k, v in case.args["weights"].items()}
    outs = []
    for x in case.args["batches"]:
        h = np.tanh(x.astype(np.float64) @ w["w1"].T + w["b1"])
        outs.append(h @ w["w2"].T + w["b2"])
    return outs


def _model(weights: dict[str, np.ndarray]) -> Any:
    import torch

    model = torch.nn.Sequential(
        torch.nn.Linear(D_IN, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, D_OUT)
    )
    with torch.no_grad():
        for layer, (w, b) in ((model[0], ("w1", "b1")), (model[2], ("w2", "b2"))):
            layer.weight.copy_(torch.from_numpy(weights[w]))
            layer.bias.copy_(torch.from_numpy(weights[b]))
    return model


def _same(a: Any, b: Any) -> bool:
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    import torch

    device = torch.device(case.args["device"])
    model = _model(case.args["weights"])  # on the CPU, as a freshly built model is
    batches = [torch.from_numpy(x.copy()) for x in case.args["batches"]]  # CPU, as a loader gives
    try:
        outs = fn(model, batches, device)
    except Exception as exc:  # a device error, with what to look for
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        why = ""
        if "same device" in text or ("device" in text and "expected" in text):
            why = "a tensor on the wrong device (move the model and every batch): "
        elif "meta tensor" in text:
            why = "an output was copied back to the CPU (.cpu(), .item(), .numpy()): "
        else:
            raise  # any other error: the grader names it and the learner's line
        raise api.CheckError(f"device={str(device)!r}: {why}{type(exc).__name__}: {text}") from None
    if not isinstance(outs, (list, tuple)):
        raise api.CheckError(f"predict returned {type(outs).__name__}, expected a list of tensors")
    if len(outs) != len(batches):
        raise api.CheckError(f"predict returned {len(outs)} outputs for {len(batches)} batches")
    for name, p in model.named_parameters():
        if not _same(p.device, device):
            raise api.CheckError(
                f"the model's parameter {name} is on {p.device}, expected {device} "
                "(move the model you were given: Module.to works in place)"
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
