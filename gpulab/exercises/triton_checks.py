"""Pieces the Triton exercises' checks share (catalog 50..52): torch tensors in guarded buffers,
Triton's interpreter on a machine without a GPU, and a timing spec that checks every timed call.

A Triton kernel takes torch tensors. The guards are the kernel track's (`kernel_checks`): every
input and the output sit in the middle of a larger buffer, so a missing mask writes into a guard
("wrote past the end") or reads a guard's huge value into the result. The host buffers come back
in the layout `kernel_checks.compare_guarded` reads.

Without a GPU, Triton's interpreter (`TRITON_INTERPRET=1`) runs the kernels with NumPy: every
program of the grid in turn, the masks and the pointer arithmetic as written, so correctness is
checked the same way, but no figure it gives says anything about a GPU. `use_interpreter` sets
it before Triton is imported (Triton reads it when a function is decorated, so a worker that
imported Triton earlier still gets interpreted kernels from the learner's file).

torch and Triton are imported inside the functions: check modules are imported by processes that
never touch either (the catalog, the UI).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpulab.exercises import api, refuse
from gpulab.exercises import kernel_checks as kc
from gpulab.exercises.fresh import Refresher
from gpulab.exercises.own_work import TRITON_KIND

UNTIMED = "interpreter: correctness only, no speed grade (Triton's interpreter on the CPU)"
# What a Triton exercise's call may do besides launching the learner's kernels: allocate, view,
# and hand a launch its pointers. Any other torch operation on any tensor is refused (a partial
# decoy: the learner's kernel on one part, torch on the rest, fails by name).
ALLOW = refuse.Allow(
    refuse.ALLOCATION_AND_VIEWS,
    "writing the Triton kernel",
    calls=refuse.LAUNCH_CALLS,
    exempt=("triton",),
    # what Triton's launcher and interpreter do to the learner's tensors: read their storage and
    # copy it to the host and back (the interpreter), copy or clone for an autotuner's
    # restore_value; none of these computes an answer, whoever hands Triton the call
    exempt_ops=frozenset({"aten.copy_", "aten.set_", "aten.clone", "aten._to_copy"}),
    exempt_calls=frozenset({"torch.Tensor.untyped_storage", "torch.Tensor.storage"}),
)


def use_interpreter(ctx: api.Context) -> bool:
    """Turn Triton's interpreter on where there is no GPU (before Triton is imported), then
    import Triton so the grader's watch counts the learner's launches. True when interpreting."""
    interpret = not ctx.gpu
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
        if not _interpreted_triton():
            _forget_triton()
    else:
        # Triton's own disk cache of autotune timings, keyed on the kernel's source (and what it
        # calls), its configs, the tuning key and the GPU: an autotuner made anew by every check
        # timed each config at each of the cases' shapes, 4.4 s of triton-matmul's 6.3 s repeat
        # check on an H200 (bench/results/exercises-h200x2-2ae75d8.md), for a kernel that had
        # not changed. An edited kernel is tuned again; a learner's own setting is kept.
        os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    import triton  # noqa: F401  - deferred: imported here so the watch sees it (module doc)

    return interpret


def _interpreted_triton() -> bool:
    """Whether the Triton imported here (if any) was imported with its interpreter on.

    Triton's own library functions (`tl.sum`, `tl.max`, ...) are jitted when Triton is first
    imported; imported without the interpreter (torch.compile imports Triton even on a CPU), they
    are compiled-kernel objects that the interpreter refuses to call ("Cannot call @triton.jit'd
    outside of the scope of a kernel")."""
    triton = sys.modules.get("triton")
    if triton is None:
        return True
    standard = sys.modules.get("triton.language.standard")
    return type(getattr(standard, "sum", None)).__name__ == "InterpretedFunction"


def _forget_triton() -> None:
    """Drop Triton's Python modules so the next import runs with the interpreter on. Its
    compiled extension (triton._C) stays loaded: an extension cannot be imported twice. Whoever
    imported Triton before (torch's Inductor) keeps the modules it holds."""
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        if not name.startswith("triton._C"):
            del sys.modules[name]


def untimed(ctx: api.Context) -> str:
    """Why this machine gives no speed grade ("" on a GPU)."""
    return "" if ctx.gpu else UNTIMED


def _torch_dtype(dtype: Any) -> Any:
    import torch  # deferred: see the module doc

    return {np.float32: torch.float32, np.float16: torch.float16}[np.dtype(dtype).type]


def guarded_tensor(x: np.ndarray, device: str) -> tuple[Any, Any]:
    """(buffer, view): a copy of `x` on `device` in the middle of a buffer filled with the
    input guard (kernel_checks.input_guard): a read past either end spoils the result."""
    import torch  # deferred: see the module doc

    g = kc.guard_size(x.size)
    buf = torch.full(
        (x.size + 2 * g,), float(kc.input_guard(x.dtype)), dtype=_torch_dtype(x.dtype)
    ).to(device)
    view = buf[g : g + x.size].view(x.shape)
    view.copy_(torch.from_numpy(np.ascontiguousarray(x)).to(device))
    return buf, view


def run_guarded(
    fn: Callable[..., Any],
    inputs: Sequence[np.ndarray],
    shape: tuple[int, ...],
    dtype: Any,
    device: str,
    names: Sequence[str] = (),
) -> np.ndarray:
    """Call fn(*guarded device copies of inputs, out) once with a NaN-poisoned out in the middle
    of a guarded buffer; the host buffer, shape (1, guard + total + guard), as
    kernel_checks.compare_guarded reads it. After the call every input and its guards must be as
    they were (api.CheckError names the input and the element)."""
    import torch  # deferred: see the module doc

    total = int(np.prod(shape, dtype=np.int64))
    g = kc.guard_size(total)
    args, kept = [], []
    for i, x in enumerate(inputs):
        buf, view = guarded_tensor(x, device)
        args.append(view)
        kept.append((names[i] if i < len(names) else f"input {i + 1}", x, buf, buf.clone()))
    out_buf = torch.full((total + 2 * g,), float("nan"), dtype=_torch_dtype(dtype)).to(device)
    # held until out_buf is read: a finalizer on the view handed over (weakref.finalize) ran
    # when it was let go, past the watch, and a red team's torch.addcmul wrote out there
    out = out_buf[g : g + total].view(shape)
    fn(*args, out)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    for name, host, buf, before in kept:
        if not torch.equal(buf.view(torch.int16), before.view(torch.int16)):
            raise api.CheckError(kc.input_changed(name, host, buf.cpu().numpy()))
    got = out_buf.cpu().numpy().copy()[None]  # a copy: on the CPU .numpy() shares the memory
    del out
    return got


def one_kernel(watch: Any, what: str) -> None:
    """Raise api.CheckError when the learner's last call ran more than one kernel of theirs: an
    exercise that teaches a fused kernel (`what`: "the affine and the clamp") is not met by its
    steps split into kernels, each a pass over memory (a red team's affine kernel then an in-place
    clamp, and a causal softmax as three kernels, passed on the interpreter: correctness only).
    Kernels are told apart by their function, and one function launched twice outside an
    autotuner's trials is two passes: an autotuner's many trial launches of one are one."""
    calls = getattr(watch, "calls", None)
    if not calls:
        return  # the check's function called directly (tests), not through the grader's watch
    launches = [k for k in calls[-1].launches if k.kind == TRITON_KIND]
    names = list(dict.fromkeys(k.kernel for k in launches))
    if len(names) > 1:
        raise api.CheckError(
            f"your call ran {len(names)} kernels of yours ({', '.join(names)}): this exercise "
            f"fuses {what} into one kernel, so each element is read and written once; each "
            "kernel more is another pass over memory"
        )
    # One function launched several times is several passes too: a red team's causal softmax
    # ran the unfused path's three passes as three launches of one kernel, picked by a
    # constexpr stage (passed on the interpreter)
    passes = [k for k in launches if not k.trial]
    if len(passes) > 1:
        raise api.CheckError(
            f"your call launched {passes[0].kernel} {len(passes)} times: this exercise fuses "
            f"{what} into one launch, so each element is read and written once; each launch "
            "more is another pass over memory"
        )


def spec(
    fn: Callable[..., Any],
    setup: Callable[[int], tuple],
    library: Callable[[tuple], Any],
    library_name: str,
    work: float,
    *,
    metric: str = "GB/s",
    ceiling: str = "copy",
    note: str = "",
    rtol: float = 1e-4,
    atol: float = 1e-6,
) -> api.TimingSpec:
    """kernel_checks.spec for torch tensors: io is a tuple passed to fn positionally, the output
    last. Before each timed call the output is poisoned and every element of every input
    rewritten (gpulab.exercises.fresh: nothing kept from an earlier call is right); after it the
    output is compared on the device with `library` on the same inputs (`library(io)` writes
    io[-1] or returns its answer)."""
    import torch  # deferred: see the module doc

    scratch: dict[int, Any] = {}
    refresh = Refresher()

    def prepare(io: tuple) -> None:
        io[-1].fill_(float("nan"))
        refresh(*(x for x in io[:-1] if isinstance(x, torch.Tensor) and x.numel() > 1))

    def check_call(io: tuple, returned: Any) -> str | None:
        mine = io[-1]
        buf = scratch.get(id(io))
        if buf is None:
            buf = scratch[id(io)] = torch.empty_like(mine)
        theirs = library((*io[:-1], buf))
        if theirs is not None:  # a library call that returns its answer (torch.softmax)
            buf = theirs
        ok = torch.isclose(mine.float(), buf.float(), rtol=rtol, atol=atol)
        if bool(ok.all()):
            return None
        why = api.compare_arrays(
            buf.float().cpu().numpy(), mine.float().cpu().numpy(), rtol=rtol, atol=atol
        )
        text = why.message if why is not None else "the outputs differ"
        return f"the output differs from {library_name}: {text}"

    return api.TimingSpec(
        setup=setup,
        learner=lambda io: fn(*io),
        library=library,
        library_name=library_name,
        work=float(work),
        metric=metric,
        ceiling=ceiling,
        sync="torch",
        sets=4,
        note=note,
        prepare=prepare,
        check_call=check_call,
        # the library's answer is taken on the inputs after the call: they must be as handed
        inputs=lambda io: [x for x in io[:-1] if isinstance(x, torch.Tensor) and x.numel() > 1],
    )
