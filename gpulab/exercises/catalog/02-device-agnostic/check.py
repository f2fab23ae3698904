"""Check for device-agnostic: polynomial features built on whichever device is asked for.

Every case names a device. Besides the worker's own device the check asks for "cpu" explicitly
and, on a machine without a GPU, for PyTorch's meta device (tensors with a shape and a dtype but
no data), so code that creates a tensor on the CPU, ignores `device` or hard-codes "cuda" fails
there too, not only on the learner's first GPU.

"Do not build on the CPU and move": a TorchFunctionMode watches the call, and a tensor of more
copied from the CPU onto the asked device (Tensor.to, .cuda(), .type(), copy_), and a
TorchDispatchMode any ATen operator that turns a CPU tensor into one on that device, by whatever
name it was reached (Tensor.new_tensor, torch.ops.aten._to_copy), fails the case, e.g. `torch.arange(degree + 1).to(device)`. On a CPU-only machine the meta case
is where this shows; on a GPU, every case that asks for the GPU. The values must come back
unchanged.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "features"
DEGREES = (3, 1, 4, 2, 5, 3)


def _values(rng: np.random.Generator, n: int) -> np.ndarray:
    # Within +-3 (3**5 stays far from float32 limits), both signs, never zero.
    mag = rng.uniform(0.25, 3.0, n)
    return (mag * rng.choice([-1.0, 1.0], n)).astype(np.float32)


def cases(ctx: api.Context) -> list[api.Case]:
    rng = ctx.rng
    out = [
        api.Case(
            f"n={n}, degree={d}, device='cpu'",
            {"values": _values(rng, n), "degree": d, "device": "cpu"},
        )
        for n, d in zip(api.EDGE_SIZES[:3], DEGREES[:3], strict=True)
    ]
    out += [
        api.Case(
            f"n={n}, degree={d}, device={ctx.device!r}",
            {"values": _values(rng, n), "degree": d, "device": ctx.device},
        )
        for n, d in zip(api.EDGE_SIZES[3:], DEGREES[3:], strict=True)
    ]
    out.append(
        api.Case(
            "n=257, degree=3, device=None (pick the best device yourself)",
            {"values": _values(rng, 257), "degree": 3, "device": None},
        )
    )
    if not ctx.gpu:
        # Without a GPU, meta is the "other" device. Only then: its first use in a process
        # imports a large part of torch (seconds), and a GPU is a better other device anyway.
        out.append(
            api.Case(
                "n=100, degree=4, device='meta' (shapes only: catches tensors made on the CPU)",
                {"values": _values(rng, 100), "degree": 4, "device": "meta"},
            )
        )
    n = ctx.big(4 * 4, cap=1 << 24)
    out.append(
        api.Case(
            f"n={n}, degree=3, device={ctx.device!r} (big)",
            {"values": _values(rng, n), "degree": 3, "device": ctx.device},
        )
    )
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    x = case.args["values"].astype(np.float64)
    return np.stack([x**k for k in range(case.args["degree"] + 1)], axis=1)


def _wanted_device(asked: str | None) -> Any:
    import torch

    if asked is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(asked)


def _same(a: Any, b: Any) -> bool:
    # "cuda" and "cuda:0" are the same place when device 0 is the current one.
    return a.type == b.type and (a.index or 0) == (b.index or 0)


_MOVES = (
    "torch.Tensor.to",
    "torch.Tensor.cuda",
    "torch.Tensor.type",
    "torch.Tensor.copy_",
    # a CPU tensor handed to a factory with device=, or assigned into a device tensor
    "torch.as_tensor",
    "torch.tensor",
    "torch.asarray",
    "torch.Tensor.__setitem__",
    "torch.Tensor.new_tensor",
)

# torch.tensor, as_tensor, asarray and new_tensor build a tensor from a Python list in C++ with
# torch's dispatch modes excluded: the whole result built by NumPy on the host, `.tolist()`, then
# torch.tensor(..., device=device) passed as made on the device. The exponents (degree + 1 <= 6)
# and the values handed in may come that way; more host-made elements in one call are a move.
_FROM_DATA = frozenset({"tensor", "as_tensor", "asarray", "Tensor.new_tensor"})
HOST_ELEMENTS = 16


class _Twins:
    """The CPU twin of every tensor made on the meta device inside the watch, computed beside it
    by the same operators: meta has shapes and no data, so code that told the meta case from a
    real device (`if out.device.type == "cpu": out.copy_(host_table)`, an empty tensor on any
    other device) passed it with the right shape. A twin has the values the tensor would have
    held on a device with memory; a tensor of no twin came from where the check cannot follow."""

    def __init__(self) -> None:
        from torch.utils.weak import WeakTensorKeyDictionary

        self.of = WeakTensorKeyDictionary()

    def mode(self) -> Any:
        import torch
        from torch.utils import _pytree as pytree
        from torch.utils._python_dispatch import TorchDispatchMode

        meta, cpu = torch.device("meta"), torch.device("cpu")
        twins = self.of

        def is_meta(t: Any) -> bool:
            return isinstance(t, torch.Tensor) and t.device.type == "meta"

        class _Twin(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                metas = [o for o in pytree.tree_leaves(out) if is_meta(o)]
                if not metas:
                    return out
                missing = False

                def twin(a: Any) -> Any:
                    nonlocal missing
                    if is_meta(a):
                        if a not in twins:
                            missing = True
                            return a
                        return twins[a]
                    if isinstance(a, torch.device) and a == meta or a == "meta":
                        return cpu
                    return a

                targs, tkwargs = pytree.tree_map(twin, (args, kwargs))
                if missing:
                    return out
                try:
                    tout = func(*targs, **tkwargs)
                except Exception:  # noqa: BLE001 - no twin for this one: its result unknown
                    return out
                # An empty twin on the CPU may be handed the block a host table was just freed
                # from (a red team's: 492 of 500 values right), which no device would hold; a
                # resize (rare in correct code, which then writes what it grew) is as empty
                unset = "empty" in str(func) or "resize" in str(func)
                for o, t in zip(pytree.tree_leaves(out), pytree.tree_leaves(tout), strict=False):
                    if is_meta(o) and isinstance(t, torch.Tensor) and t.device.type == "cpu":
                        if unset:
                            t.fill_(float("nan") if t.is_floating_point() else 7)
                        twins[o] = t
                return out

        return _Twin()

    def from_data(self, out: Any, data: Any) -> None:
        """A tensor torch built from host data in C++, where no dispatch mode sees it."""
        import torch

        if isinstance(out, torch.Tensor) and out.device.type == "meta" and out not in self.of:
            # no twin where torch cannot build one: the result is unknown, and named so
            with contextlib.suppress(Exception):
                self.of[out] = torch.as_tensor(data, dtype=out.dtype, device="cpu").clone()


@contextlib.contextmanager
def _watching_moves(
    want: Any, given: Any = None, twins: _Twins | None = None
) -> Iterator[list[str]]:
    """Record every copy of a CPU tensor onto `want` (not the CPU) made inside the block: a
    Tensor.to / .cuda() / .type() whose input is on the CPU and whose result is on `want`, or a
    copy_ from a CPU tensor into one on `want`. On a CPU-only machine `want` is the meta device,
    so `torch.arange(n).to(device)` is seen there as it would be on a GPU."""
    import torch
    from torch.overrides import TorchFunctionMode

    from gpulab.exercises.refuse import resolve

    watched = {resolve(n): n.removeprefix("torch.") for n in _MOVES}
    moves: list[str] = []
    from_host = [0]

    def the_values_as_data(data: Any) -> bool:
        try:
            flat = np.asarray(data, dtype=np.float64).ravel()
        except Exception:  # noqa: BLE001 - not numbers the values could be: not the values
            return False
        return given is not None and np.array_equal(flat, given.astype(np.float64).ravel())

    def on_want(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and _same(t.device, want)

    def on_cpu(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.device.type == "cpu"

    class _Moves(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            try:
                name = watched.get(func)
            except TypeError:
                name = None
            if name in _FROM_DATA:
                data = (args[1:] if name == "Tensor.new_tensor" else args)[:1]
                data = data[0] if data else (kwargs or {}).get("data")
                if twins is not None:
                    twins.from_data(out, data)
                if (
                    not isinstance(data, torch.Tensor | np.ndarray)
                    and on_want(out)
                    and not the_values_as_data(data)
                ):
                    from_host[0] += out.numel()
                    if from_host[0] > HOST_ELEMENTS:
                        moves.append(
                            f"{name} of {out.numel()} values made on the host, {from_host[0]} "
                            "in this call"
                        )
                    return out
            if name and args:
                if name == "Tensor.copy_":
                    src = args[1] if len(args) > 1 else (kwargs or {}).get("src")
                    if on_want(args[0]) and on_cpu(src):
                        moves.append(f"{name} from a CPU tensor of shape {tuple(src.shape)}")
                elif name == "Tensor.__setitem__":
                    src = args[2] if len(args) > 2 else None
                    # a CPU tensor of one element is a value, as a Python number would be
                    if on_want(args[0]) and on_cpu(src) and src.numel() > 1:
                        moves.append(f"an assignment from a CPU tensor of shape {tuple(src.shape)}")
                elif on_cpu(args[0]) and on_want(out):
                    moves.append(f"{name} of a CPU tensor of shape {tuple(args[0].shape)}")
            return out

    from torch.utils._python_dispatch import TorchDispatchMode

    lo = given.__array_interface__["data"][0] if given is not None else 0
    hi = lo + (given.nbytes if given is not None else 0)
    # The exemption is for the values handed in, not for their buffer: results written into
    # it and moved from there are a move, so the bytes are compared with a copy kept here
    handed = given.copy() if given is not None else None

    def the_given_values(a: Any) -> bool:
        if not lo <= a.data_ptr() < hi:
            return False
        return bool(np.array_equal(given.view(np.uint8), handed.view(np.uint8)))

    class _Copies(TorchDispatchMode):
        """Every ATen operator, whatever Python name reached it (Tensor.new_tensor,
        torch.ops.aten._to_copy, ...): one that takes a CPU tensor of more than one element
        and gives a tensor on `want` is a move. The values the check handed in are exempt
        while they still are those values: creating the tensor from them on the device
        (torch.as_tensor) copies them once."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            outs = out if isinstance(out, tuple | list) else (out,)
            if any(on_want(o) for o in outs) and not copies:
                for a in [*args, *(kwargs or {}).values()]:
                    if on_cpu(a) and a.numel() > 1 and not the_given_values(a):
                        copies.append(f"{func} of a CPU tensor of shape {tuple(a.shape)}")
                        break
            return out

    if want.type == "cpu":  # nothing to move onto
        yield moves
        return
    copies: list[str] = []
    # Memory another library put on the device, wrapped by DLPack, passes no operator and no
    # torch function: the table computed by NumPy on the host, copied over by CuPy
    # (cupy.asarray) and handed to torch.from_dlpack, would build nothing on the device. Every
    # from_dlpack ends in torch._C._from_dlpack, looked up when it is called (GPU only: the
    # meta device takes no DLPack, and its CPU case has nothing to move onto)
    real_from_dlpack = torch._C._from_dlpack

    def from_dlpack(*args: Any, **kwargs: Any) -> Any:
        out = real_from_dlpack(*args, **kwargs)
        if on_want(out) and out.numel() > HOST_ELEMENTS:
            moves.append(f"from_dlpack of {out.numel()} values another library made")
        return out

    torch._C._from_dlpack = from_dlpack
    try:
        # the twins' mode outermost: what it computes on the CPU passes no other watch
        with twins.mode() if twins else contextlib.nullcontext(), _Moves(), _Copies():
            yield moves
    finally:
        torch._C._from_dlpack = real_from_dlpack
        if not moves:  # the Python name that moved it, where one of the watched ones did
            moves.extend(copies)


def _pick_device_wrong(fn: Any, want: Any) -> str | None:
    """What is wrong with the learner's pick_device(), read from the module `fn` came from."""
    import torch

    module = sys.modules.get(getattr(fn, "__module__", ""))
    pick = getattr(module, "pick_device", None)
    if not callable(pick):
        return "your file has no pick_device(): write it, and use it when device is None"
    got = pick()
    if not isinstance(got, torch.device) or not _same(got, want):
        return (
            f"pick_device() returned {got!r}, expected {want!r}: the GPU when "
            "torch.cuda.is_available(), else the CPU"
        )
    return None


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    import torch

    asked = case.args["device"]
    want = _wanted_device(asked)
    label = f"asked for device {asked!r}" if asked is not None else "device=None"
    values = case.args["values"].copy()
    twins = _Twins() if want.type == "meta" else None
    try:
        with _watching_moves(want, values, twins) as moves:
            got = fn(values, case.args["degree"], asked)
    except Exception as exc:  # a device error, reported with the device that was asked for
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        why = ""
        if "device" in text and "expected" in text or "same device" in text:
            why = "a tensor on the wrong device (create every tensor on `device`): "
        elif "CUDA" in text:
            why = "the code used CUDA where it was not asked for: "
        else:
            raise  # any other error: the grader names it and the learner's line
        raise api.CheckError(f"{label}: {why}{type(exc).__name__}: {text}") from None
    if not np.array_equal(values, case.args["values"]):
        raise api.CheckError(f"{label}: features changed the values it was given")
    if moves:
        raise api.CheckError(
            f"{label}: a tensor was built on the CPU and then moved ({moves[0]}): create it on "
            "the device (torch.as_tensor(values, ..., device=device), "
            "torch.arange(..., device=device))"
        )
    if not isinstance(got, torch.Tensor):
        raise api.CheckError(f"{label}: features returned {type(got).__name__}, not a tensor")
    if not _same(got.device, want):
        raise api.CheckError(f"{label}, but the result is on {got.device}, expected {want}")
    if got.dtype != torch.float32:
        raise api.CheckError(f"{label}: the result has dtype {got.dtype}, expected torch.float32")
    if asked is None:  # last: the mistakes above are the lesson's, named first
        wrong = _pick_device_wrong(fn, want)
        if wrong:
            raise api.CheckError(wrong)
    if twins is not None:
        twin = twins.of.get(got)
        if twin is None:
            raise api.CheckError(
                f"{label}: the result was not made by torch operators on the device from the "
                "values (the check follows what the meta device computes, as a GPU would hold it)"
            )
        return {"shape": tuple(got.shape), "values": twin.detach().numpy().copy()}
    return got.detach().cpu().numpy()


def compare(want: np.ndarray, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    if isinstance(got, dict):  # the meta case: the shape, and the values its twin computed
        if got["shape"] != want.shape:
            return api.Mismatch(f"out has shape {got['shape']}, expected {want.shape}")
        wrong = api.compare_arrays(want, got["values"], dtype=np.float32)
        if wrong is not None:
            return api.Mismatch(
                "on the meta device the table your operators built is not the features (the "
                "check follows them as a device with memory would hold them; work done on the "
                "host only where the device is the CPU is a property met loosely): " + wrong.message
            )
        return None
    return api.compare_arrays(want, got, dtype=np.float32)
