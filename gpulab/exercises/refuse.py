"""Refusing the library's one-call answer in an exercise that teaches the algorithm itself, or
allowing only what the exercise permits.

A list of refused calls is a denylist: any library call not on it does the work (a partial
decoy: the learner's kernel does one part, torch does the rest). So a check may instead declare
what it allows, as an `Allow` of ATen operators (allocation, views, the metadata a launch
reads, and for an algorithm exercise the few elementwise operations the algorithm is made of):

    ALLOW = Allow(frozenset({"aten.empty", "aten.view", ...}), "writing the Triton kernel")

and any other operator dispatched inside the learner's call is refused, naming the call it came
through and its line. A REFUSE table (below) still works for what a check wants to name.

An exercise such as tree-reduction asks for the levels of a tree written out; `x.sum()` would
pass every comparison and teach nothing. A check declares what it refuses:

    REFUSE = {"torch.sum": "does the whole reduction in one call: write the levels yourself"}

and every call into the learner's code runs inside `refusing(check.REFUSE)`, which watches it
with two PyTorch modes:

- a TorchFunctionMode sees the calls the learner's code makes, by the names
  `torch.overrides.resolve_name` gives them: "torch.sum", "torch.Tensor.sum" (`x.sum()`),
  "torch.Tensor.matmul" (`x @ y`), "torch.nn.functional.linear", "torch.Tensor.numpy";
- a TorchDispatchMode sees the ATen operators underneath ("aten.sum", "aten.mm"), so the same
  reduction reached through a wrapper the table does not name (a loss with reduction="sum",
  einsum, an autograd backward) is refused too, and the message names the call it came through.

A refused call raises `RefusedCall` (str() is one line: "torch.sum does the whole reduction in
one call: ...") and is also recorded in the list `refusing()` yields, so a learner's
`except Exception` that falls back to something else still fails the check. Keys starting with
"aten." go to the dispatch mode; `aten.index_put`, `aten.put` and their in-place forms count only
with accumulate=True, and `aten.scatter` only with a reduce argument (plain indexed assignment is
no reduction). `one_call_sums(advice)` is the table for a sum.

What it cannot stop is code that goes looking for the grader (popping the mode, running torch in
another thread, which the modes do not follow): docs/exercises.md says where that line is. A
mode removed by the learner's code is noticed and recorded, and whatever modes the learner's code
left pushed are popped, so nothing leaks into the next check the worker runs.

This module imports torch only inside its functions: check modules import it, and they are read
by processes that must not import torch.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpulab.core.step_trace import STAND_INS, host_memory, names_settled, python_exits
from gpulab.exercises import frames
from gpulab.exercises.api import CheckError


@dataclass(frozen=True)
class Allow:
    """What a learner's call may dispatch: ATen operator names ("aten.empty", ...), the
    Tensor methods it may call that leave torch (data_ptr for a Triton launch), and what the
    exercise is about, for the message."""

    ops: frozenset[str]
    about: str
    calls: frozenset[str] = frozenset()
    # Packages whose own code may, inside the call, run `exempt_ops` and `exempt_calls` beyond
    # the allowed ones: Triton's launcher and its CPU interpreter move tensors and read their
    # storage on the learner's behalf. Only those: Triton's code also calls whatever callable
    # it is handed (ConstexprFunction.__call__, an autotuner's hooks), so a C function such as
    # torch.addcmul handed to it runs with Triton's frame as its nearest caller, and a red team
    # passed every case with the work done that way beside a one-element launch
    exempt: tuple[str, ...] = ()
    exempt_ops: frozenset[str] = frozenset()
    exempt_calls: frozenset[str] = frozenset()

    def why(self, name: str) -> str:
        """The refusal's reason for `name`, an operator outside the allowed ones."""
        return (
            f"is not among the operations this exercise allows ({self.about}: allocation, "
            "views and your own kernels do the work)"
        )


# Allocation, views and the metadata a launch reads: what any kernel exercise's call may do to
# the tensors it was given (and to new ones) besides launching the learner's own kernels.
ALLOCATION_AND_VIEWS = frozenset(
    "aten." + op
    for op in [
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill_",
        "zero_",
        "view",
        "_unsafe_view",
        "_reshape_alias",
        "reshape",
        "as_strided",
        "slice",
        "select",
        "narrow",
        "unsqueeze",
        "squeeze",
        "expand",
        "expand_as",
        "t",
        "transpose",
        "permute",
        "alias",
        "detach",
        "lift_fresh",
        "flatten",
        "unflatten",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "view_as",
        "movedim",
        "contiguous",
        "resize_",
        "is_same_size",
        "size",
        "stride",
        "numel",
        "dim",
        "is_contiguous",
    ]
)
# The Tensor methods that leave torch without computing: a Triton launch reads the pointer.
LAUNCH_CALLS = frozenset({"torch.Tensor.data_ptr"})
# The ways out to NumPy or Python, refused where an Allow is given unless it names them.
# __cuda_array_interface__ hands a CUDA tensor to CuPy or Numba (cupy.asarray reads it), whose
# kernels no torch mode sees: cupy.matmul on a and b beside a decoy launch would do a Triton
# matmul's work on a GPU
_EXITS = frozenset(
    [
        "torch.Tensor.numpy",
        "torch.Tensor.tolist",
        "torch.Tensor.__array__",
        "torch.Tensor.__dlpack__",
        "torch.Tensor.__cuda_array_interface__.__get__",
        "torch.Tensor.untyped_storage",
        "torch.Tensor.storage",
        "torch.Tensor.data_ptr",
    ]
)


@contextlib.contextmanager
def allowing(allow: Allow) -> Iterator[list[str]]:
    """Watch the calls made inside the block: an ATen operator outside `allow.ops` (and the
    metadata every tensor answers), or a way out to NumPy or Python outside `allow.calls`,
    raises RefusedCall and is appended to the list this yields."""
    calls: list[str] = []
    import torch
    from torch.overrides import TorchFunctionMode, resolve_name
    from torch.utils._python_dispatch import TorchDispatchMode

    # The rules as they stand when the block starts, held here: a red team's tree_sum widened
    # the check's ALLOW inside its call (object.__setattr__ on the frozen instance, found
    # through sys.modules), called torch.sum, and put it back before returning (gold, no tree)
    allow = replace(allow)
    exits, called_from, make_refusal, refused = _EXITS, _called_from, refusal, RefusedCall
    state = threading.local()

    def refuse(message: str) -> None:
        calls.append(message)
        raise refused(message)

    def exempt(name: str, kinds: frozenset[str]) -> bool:
        return name in kinds and bool(allow.exempt) and called_from(allow.exempt)

    class _Calls(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            name = resolve_name(func)
            # data_ptr stays allowed to the learner's own code (a wrapper's aliasing assert); what
            # turns a pointer into an array (ctypes, np.ctypeslib, CuPy's UnownedMemory) is
            # refused by the source scan (gpulab.exercises.reach)
            if name in exits and name not in allow.calls and not exempt(name, allow.exempt_calls):
                refuse(make_refusal(name, allow.why(name)))
            outer = getattr(state, "via", None)
            state.via = outer or name or getattr(func, "__qualname__", None)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                state.via = outer

    class _Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            name = str(func.overloadpacket)
            if (
                name not in allow.ops
                and not name.startswith("aten.sym_")
                and not exempt(name, allow.exempt_ops)
            ):
                refuse(make_refusal(name, allow.why(name), getattr(state, "via", None)))
            return func(*args, **(kwargs or {}))

    calls_mode, ops_mode = _Calls(), _Ops()
    f_depth = torch._C._len_torch_function_stack()
    d_depth = torch._C._len_torch_dispatch_stack()
    calls_mode.__enter__()
    ops_mode.__enter__()
    try:
        # no exemption here: Triton starts no thread and takes no exit to Python for a launch,
        # and a thread or a map_ started through one of its frames (a C function handed to
        # ConstexprFunction.__call__) ran torch's addcmul unwatched, or a Python callback
        with one_thread(calls, exits=True):
            yield calls
    finally:
        _unwind(torch, calls, calls_mode, ops_mode, f_depth, d_depth)


def _called_from(packages: tuple[str, ...]) -> bool:
    """Whether a frame of one of `packages` stands between this call and the learner's code:
    the operation is that package's own doing (Triton's launcher moving a tensor, Inductor
    starting its compile workers), not the learner's."""
    frame: Any = sys._getframe(2)
    for _ in range(200):
        if frame is None:
            return False
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("_gpulab_learner"):
            return False
        if module.split(".")[0] in packages and module_frame(frame):
            return True
        frame = frame.f_back
    return False


def module_frame(frame: Any) -> bool:
    """Whether a frame runs code of the module its globals name: those globals are the loaded
    module's own, and the code was compiled from that module's file. A function exec'd into a
    fresh dict whose `__name__` says "triton.x" is the learner's code under a borrowed name."""
    module = sys.modules.get(str(frame.f_globals.get("__name__", "")))
    if module is None or frame.f_globals is not getattr(module, "__dict__", None):
        return False
    path = getattr(module, "__file__", None)
    return bool(path) and frame.f_code.co_filename == path


_THREADS = "starts another thread or process: the check watches the thread that called you"
_DLPACK = "hands the tensor to another library through DLPack, past the check's watch"
_SHARED = (
    "makes a tensor over NumPy's or Python's memory: what is copied into it leaves torch, past "
    "the check's watch"
)
_SAVED = "serializes the tensor's storage past the check's watch"


_PYTHON_EXIT = (
    "hands the tensor's values to Python (a callback on each element), past the check's "
    "watch: the exercise's own operations must do the work"
)


@contextlib.contextmanager
def one_thread(calls: list[str], exits: bool, exempt: tuple[str, ...] = ()) -> Iterator[None]:
    """Inside the block, starting a thread or a process (where torch's modes do not follow)
    and, with `exits`, handing a tensor out through DLPack by any name, are refused: recorded
    in `calls` and raised. Calls made by the code of `exempt` packages (Triton's own) pass."""
    # deferred: the process and pool modules load only where a check watches a call
    import concurrent.futures
    import multiprocessing
    import threading as _threading

    originals: dict[str, Any] = {}  # what each patch stands in for, by its label
    watched = _threading.get_ident()

    def elsewhere() -> bool:
        """Whether another thread than the watched call's, with no frame of the learner's on
        its stack, asks: the worker's or a test harness's own thread starting one of its own
        while the call runs. The patches are process-wide, and under load such a start was
        charged to the call, or to our yardstick ("our yardstick made a call this check
        refuses: threading.Thread.start"). A thread of the learner's own that could ask is
        refused where it starts, or named when the check ends (sandbox.foreign_threads)."""
        if _threading.get_ident() == watched:
            return False
        frame: Any = sys._getframe(2)
        while frame is not None:
            if str(frame.f_globals.get("__name__", "")).startswith(frames.LEARNER):
                return False
            frame = frame.f_back
        return True

    def refuse(what: str, why: str, only: Any = None) -> Any:
        """A stand-in for `what` that refuses (when `only(*args)` says so, if given)."""

        def refused(*args: Any, **kwargs: Any) -> Any:
            if (
                (exempt and _called_from(exempt))
                or (only is not None and not only(*args))
                or elsewhere()
            ):
                return originals[what](*args, **kwargs)
            message = _one_line(f"{what} {why}")
            calls.append(message)
            raise RefusedCall(message)

        return refused

    patches: list[tuple[Any, str, Any]] = [
        (_threading.Thread, "start", refuse("threading.Thread.start", _THREADS)),
        (concurrent.futures.ThreadPoolExecutor, "submit", refuse("a thread pool", _THREADS)),
        (concurrent.futures.ProcessPoolExecutor, "submit", refuse("a process pool", _THREADS)),
        (multiprocessing.Process, "start", refuse("multiprocessing.Process.start", _THREADS)),
    ]
    labels = ["threading.Thread.start", "a thread pool", "a process pool"]
    labels += ["multiprocessing.Process.start"]
    if exits:
        torch = sys.modules.get("torch")
        if torch is not None:
            outs = (
                (torch._C, "_to_dlpack", _DLPACK),
                (torch._C, "_to_dlpack_versioned", _DLPACK),  # NumPy 2's from_dlpack asks this
                (torch.utils.dlpack, "to_dlpack", _DLPACK),
                (torch, "from_numpy", _SHARED),
                (torch, "frombuffer", _SHARED),
            )
            for owner, name, why in outs:
                if hasattr(owner, name):
                    patches.append((owner, name, refuse(f"torch.{name}", why)))
                    labels.append(f"torch.{name}")
            # The same doors under other names: a tensor made over an ndarray or a buffer
            # (shares its memory on the CPU), and C++ serialization, which reads the storage
            # past every operator (a red team summed the pickled bytes with NumPy)
            for name in ("as_tensor", "asarray"):
                if hasattr(torch, name):
                    label = f"torch.{name}"
                    patches.append((torch, name, refuse(label, _SHARED, only=host_memory)))
                    labels.append(label)
            if hasattr(torch._C, "_pickle_save"):
                patches.append((torch._C, "_pickle_save", refuse("torch._C._pickle_save", _SAVED)))
                labels.append("torch._C._pickle_save")
    exits_watched: Any = contextlib.nullcontext()
    if exits and sys.modules.get("torch") is not None:

        def exit_seen(name: str) -> None:
            if exempt and _called_from(exempt):
                return
            why = _DLPACK if "dlpack" in name else _PYTHON_EXIT
            why = _SAVED if name == "torch.save" else why
            message = _one_line(f"{name} {why}")
            calls.append(message)
            raise RefusedCall(message)

        exits_watched = python_exits(exit_seen, summarized=True)
    if exits and sys.modules.get("torch") is not None:
        names_settled()
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for label, (_, _, old) in zip(labels, saved, strict=True):
        originals[label] = old
    for obj, name, new in patches:
        setattr(obj, name, new)
    STAND_INS.update(id(new) for _, _, new in patches)
    try:
        with exits_watched:
            yield
    finally:
        STAND_INS.difference_update(id(new) for _, _, new in patches)
        for obj, name, old in saved:
            setattr(obj, name, old)


_ALIASED = (
    "while your file loads makes a tensor and NumPy (or a file, a Python buffer) share memory: "
    "a call that copies its input there hands the work past the check's watch; make a copy "
    "(torch.tensor(array), array.copy())"
)


@contextlib.contextmanager
def aliases_refused(calls: list[str]) -> Iterator[None]:
    """While the learner's file loads, a tensor and memory outside torch are not made to share
    memory, by any of the ways in (from_numpy, frombuffer, a shared from_file, as_tensor or
    asarray over a host array, from_dlpack of one) or out (numpy(), __array__, __dlpack__).
    Such a pair outlives the import: a red team's tree_sum made torch.from_numpy(buffer) at
    import, copied x into it in each call (copy_ is allowed) and summed the buffer with NumPy
    (gold, no tree), and its compile-fused did the chain in NumPy over np.memmap of the file a
    torch.from_file(shared=True) tensor mapped. Refused ones are recorded in `calls` too: a
    file that catches the refusal still fails."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return

    ask = frames.classifier()
    getframe = sys._getframe

    def refuse(what: str, real: Any, only: Any = None) -> Any:
        words = (what.rsplit(".", 1)[-1],)

        def refused(*args: Any, **kwargs: Any) -> Any:
            # a library the file imports may share memory for its own use as it loads (its line
            # names the function); one handed the function by the learner's code does not
            caller = getframe(1)
            mine = ask.learners(caller) or (
                not ask.names(caller, words) and ask.any_learner(caller)
            )
            if not mine or (only is not None and not only(*args, **kwargs)):
                return real(*args, **kwargs)
            message = _one_line(f"{what} {_ALIASED}")
            calls.append(message)
            raise RefusedCall(message)

        return refused

    def shared(_filename: Any = None, shared: Any = None, *_a: Any, **kw: Any) -> bool:
        return bool(kw.get("shared", shared))

    def from_host(data: Any = None, *_a: Any, **_kw: Any) -> bool:
        return host_memory(data)

    dlpack = getattr(torch.utils, "dlpack", None)
    targets: list[tuple[Any, str, str, Any]] = [
        (torch, "from_numpy", "torch.from_numpy", None),
        (torch, "frombuffer", "torch.frombuffer", None),
        (torch, "from_file", "torch.from_file", shared),
        (torch, "as_tensor", "torch.as_tensor", from_host),
        (torch, "asarray", "torch.asarray", from_host),
        (torch, "from_dlpack", "torch.from_dlpack", from_host),
        (dlpack, "from_dlpack", "torch.utils.dlpack.from_dlpack", from_host),
        (torch.UntypedStorage, "from_file", "torch.UntypedStorage.from_file", shared),
        (torch.UntypedStorage, "from_buffer", "torch.UntypedStorage.from_buffer", None),
        (torch.Tensor, "numpy", "torch.Tensor.numpy", None),
        (torch.Tensor, "__array__", "torch.Tensor.__array__", None),
        (torch.Tensor, "__dlpack__", "torch.Tensor.__dlpack__", None),
        # memory in /dev/shm or behind a file descriptor, which NumPy maps through /proc/self/fd
        (torch.Tensor, "share_memory_", "torch.Tensor.share_memory_", None),
        (torch.UntypedStorage, "share_memory_", "torch.UntypedStorage.share_memory_", None),
        (torch.UntypedStorage, "_share_fd_cpu_", "torch.UntypedStorage._share_fd_cpu_", None),
        (
            torch.UntypedStorage,
            "_share_filename_cpu_",
            "torch.UntypedStorage._share_filename_cpu_",
            None,
        ),
        (torch.UntypedStorage, "_new_shared", "torch.UntypedStorage._new_shared", None),
    ]
    saved = []
    for owner, name, label, only in targets:
        if owner is None or not hasattr(owner, name):
            continue
        own = name in vars(owner)
        stand_in = refuse(label, getattr(owner, name), only)
        saved.append((owner, name, own, vars(owner)[name] if own else None))
        setattr(owner, name, stand_in)
        STAND_INS.add(id(stand_in))
    try:
        yield
    finally:
        for owner, name, own, real in reversed(saved):
            STAND_INS.discard(id(getattr(owner, name, None)))
            if own:
                setattr(owner, name, real)
            else:
                delattr(owner, name)


class RefusedCall(CheckError):
    """The learner's code called something the exercise refuses; str() is one line. A
    CheckError, so a check's run() may let it through as the verdict's message."""


_local = threading.local()  # the stack of (table, calls) of the refusing() blocks of a thread

# Conditional ATen refusals: an indexed assignment or a scatter is a reduction only like this.
_ACCUMULATING = frozenset({"aten.index_put", "aten.index_put_", "aten._index_put_impl_",
                           "aten.put", "aten.put_"})  # fmt: skip
_REDUCING_SCATTER = frozenset({"aten.scatter", "aten.scatter_"})


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def shown(name: str) -> str:
    """The name a person wrote: torch.einsum lives in torch.functional, x.sum() is Tensor.sum."""
    if name.startswith("torch.functional."):
        return "torch." + name.removeprefix("torch.functional.")
    return name


def refusal(name: str, why: str, via: str | None = None) -> str:
    """The one-line message: "torch.sum does ...", or "F.l1_loss reaches aten.sum, which ..."."""
    if via and not via.startswith(f"{name}."):  # torch.ops.aten.sum.default is aten.sum itself
        return _one_line(f"{shown(via)} reaches {name}, which {why}")
    return _one_line(f"{shown(name)} {why}")


def _stack() -> list[tuple[dict[str, str], list[str]]]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _accumulates(name: str, func: Any, args: tuple, kwargs: dict) -> bool:
    if name in _ACCUMULATING:
        if "accumulate" in kwargs:
            return bool(kwargs["accumulate"])
        for i, arg in enumerate(func._schema.arguments):
            if arg.name == "accumulate":
                return bool(args[i]) if i < len(args) else bool(arg.default_value)
        return False
    if name in _REDUCING_SCATTER:
        return "reduce" in func._overloadname or "reduce" in kwargs
    return True


@contextlib.contextmanager
def refusing(names: Mapping[str, str]) -> Iterator[list[str]]:
    """Watch the calls made inside the block; a call named in `names` (name -> why) raises
    RefusedCall and is appended, as its one-line message, to the list this yields.

    Nested blocks share the watch: inside an enclosing refusing() that refuses at least the
    same names, no second mode is pushed and the enclosing block's list is yielded."""
    table = {str(k): _one_line(v) for k, v in names.items()}
    stack = _stack()
    for outer_table, outer_calls in reversed(stack):
        if table.items() <= outer_table.items():
            yield outer_calls
            return
    calls: list[str] = []
    if not table:
        yield calls
        return
    import torch
    from torch.overrides import TorchFunctionMode, resolve_name
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = {k: v for k, v in table.items() if k.startswith("aten.")}
    state = threading.local()
    state.via = None

    def refuse(message: str) -> None:
        calls.append(message)
        raise RefusedCall(message)

    # The table's own names first: torch.mm is also torch.spmm, and resolve_name knows one.
    by_func = {}
    for key in table:
        found = resolve(key)
        if found is not None:
            with contextlib.suppress(TypeError):
                by_func[found] = key

    class _Calls(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            try:
                name = by_func.get(func) or resolve_name(func)
            except TypeError:  # an unhashable callable: no name of ours
                name = resolve_name(func)
            why = table.get(name) if name else None
            if why is not None:
                refuse(refusal(name, why))
            if not aten:
                return func(*args, **(kwargs or {}))
            outer, state.via = getattr(state, "via", None), outer_name(name, func)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                state.via = outer

    def outer_name(name: str | None, func: Any) -> str | None:
        if getattr(state, "via", None):  # keep the learner's own call, not its insides
            return state.via
        return name or getattr(func, "__qualname__", None)

    class _Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            kwargs = kwargs or {}
            name = str(func.overloadpacket)
            why = aten.get(name)
            if why is not None and _accumulates(name, func, args, kwargs):
                refuse(refusal(name, why, getattr(state, "via", None)))
            return func(*args, **kwargs)

    calls_mode, ops_mode = _Calls(), (_Ops() if aten else None)
    f_depth = torch._C._len_torch_function_stack()
    d_depth = torch._C._len_torch_dispatch_stack()
    stack.append((table, calls))
    calls_mode.__enter__()
    if ops_mode is not None:
        ops_mode.__enter__()
    try:
        with one_thread(calls, exits=bool(aten)):
            yield calls
    finally:
        stack.pop()
        _unwind(torch, calls, calls_mode, ops_mode, f_depth, d_depth)


def resolve(name: str) -> Any:
    """The object a dotted torch name stands for ("torch.Tensor.sum" -> Tensor.sum), or None
    (an "aten." name, a typo, a function this torch does not have)."""
    import torch

    if not name.startswith("torch."):
        return None
    obj: Any = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _unwind(torch: Any, calls: list[str], calls_mode: Any, ops_mode: Any, f: int, d: int) -> None:
    """Pop our modes and whatever the learner's code left above them; record a removed mode."""
    tampered = False
    if ops_mode is not None:
        while torch._C._len_torch_dispatch_stack() > d + 1:
            torch._C._pop_torch_dispatch_stack()
        n = torch._C._len_torch_dispatch_stack()
        if n == d + 1 and torch._C._get_dispatch_stack_at(d) is ops_mode:
            ops_mode.__exit__(None, None, None)
        else:
            tampered = True
    while torch._C._len_torch_function_stack() > f + 1:
        torch._C._pop_torch_function_stack()
    n = torch._C._len_torch_function_stack()
    if n == f + 1 and torch._C._get_function_stack_at(f) is calls_mode:
        calls_mode.__exit__(None, None, None)
    else:
        tampered = True
    if tampered:
        calls.append("the code removed the check's watch on its torch calls (a TorchFunctionMode)")


def watching(rule: Mapping[str, str] | Allow) -> Any:
    """The context that enforces a check's rule: allowing(ALLOW) or refusing(REFUSE)."""
    return allowing(rule) if isinstance(rule, Allow) else refusing(rule)


def call(rule: Mapping[str, str] | Allow, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs) inside the rule's watch (an Allow, or a REFUSE table): its result, or
    RefusedCall with the first refusal when anything was refused, even where the learner's code
    caught the exception and went on (or raised something else)."""
    with watching(rule) as calls:
        try:
            out = fn(*args, **kwargs)
        except Exception:  # re-raised unless a refusal explains it
            if not calls:
                raise
    if calls:
        raise RefusedCall(calls[0])
    return out


# --- the table for a sum ------------------------------------------------------------------------

_SUM = "does the whole reduction in one call"
_PRODUCTS = "sums products in one call (a matmul or a dot with ones is a sum)"
_OUT = "hands the values to NumPy or Python, whose sum does the reduction in one call"
_OTHER = "reduces the values in one call, a sum by another name"

_SUM_CALLS = (
    "torch.sum torch.Tensor.sum torch.nansum torch.Tensor.nansum torch.mean torch.Tensor.mean "
    "torch.nanmean torch.Tensor.nanmean torch.cumsum torch.Tensor.cumsum torch.Tensor.cumsum_ "
    "torch.Tensor.sum_to_size torch.trapz torch.trapezoid torch.cumulative_trapezoid "
    "torch.std_mean torch.var_mean torch.logsumexp torch.Tensor.logsumexp torch.special.logsumexp "
    "torch.logcumsumexp torch.Tensor.logcumsumexp torch.prod torch.Tensor.prod torch.cumprod "
    "torch.Tensor.cumprod torch.Tensor.cumprod_ torch.sym_sum torch.bincount torch.Tensor.bincount "
    "torch.histogram torch.Tensor.histogram torch.histogramdd torch.index_add torch.Tensor.index_add "
    "torch.Tensor.index_add_ torch.scatter_add torch.Tensor.scatter_add torch.Tensor.scatter_add_ "
    "torch.scatter_reduce torch.Tensor.scatter_reduce torch.Tensor.scatter_reduce_ "
    "torch.nn.functional.embedding_bag torch.embedding_bag torch.nn.functional.avg_pool1d "
    "torch.nn.functional.avg_pool2d torch.nn.functional.avg_pool3d "
    "torch.nn.functional.adaptive_avg_pool1d torch.nn.functional.adaptive_avg_pool2d "
    "torch.nn.functional.adaptive_avg_pool3d torch.nn.functional.lp_pool1d "
    "torch.nn.functional.lp_pool2d torch.nn.functional.fold"
)
_PRODUCT_CALLS = (
    "torch.matmul torch.Tensor.matmul torch.Tensor.__matmul__ torch.Tensor.__rmatmul__ "
    "torch.linalg.matmul torch.mm torch.Tensor.mm torch.mv torch.Tensor.mv torch.dot "
    "torch.Tensor.dot torch.vdot torch.Tensor.vdot torch.inner torch.Tensor.inner "
    "torch.functional.einsum torch.functional.tensordot torch.functional.chain_matmul "
    "torch.linalg.multi_dot torch.linalg.vecdot torch.bmm torch.Tensor.bmm torch.addmm "
    "torch.Tensor.addmm torch.addmv torch.Tensor.addmv torch.addbmm torch.baddbmm torch.trace "
    "torch.Tensor.trace torch.nn.functional.linear torch.nn.functional.bilinear "
    "torch.nn.functional.conv1d torch.nn.functional.conv2d torch.nn.functional.conv3d "
    "torch.nn.functional.conv_transpose1d torch.nn.functional.conv_transpose2d "
    "torch.nn.functional.conv_transpose3d torch.convolution torch.linalg.lstsq"
)
_OUT_CALLS = (
    "torch.Tensor.numpy torch.Tensor.tolist torch.Tensor.__array__ torch.Tensor.__dlpack__ "
    "torch.Tensor.untyped_storage torch.Tensor.storage torch.Tensor.data_ptr"
)
_OTHER_CALLS = (
    "torch.functional.norm torch.Tensor.norm torch.linalg.norm torch.linalg.vector_norm "
    "torch.linalg.matrix_norm torch.std torch.Tensor.std torch.var torch.Tensor.var "
    "torch.softmax torch.Tensor.softmax torch.nn.functional.softmax torch.log_softmax "
    "torch.Tensor.log_softmax torch.nn.functional.log_softmax torch.native_layer_norm "
    "torch.native_batch_norm torch.native_group_norm torch.nn.functional.layer_norm "
    "torch.nn.functional.batch_norm torch.nn.functional.group_norm "
    "torch.nn.functional.instance_norm torch.nn.functional.l1_loss torch.nn.functional.mse_loss "
    "torch.nn.functional.nll_loss torch.nn.functional.smooth_l1_loss "
    "torch.nn.functional.huber_loss torch.Tensor.backward torch.autograd.grad "
    "torch.autograd.backward"
)
# Underneath every wrapper: the ATen operators that add many values in one call.
_ATEN = (
    "sum nansum mean nanmean cumsum cumsum_ cumprod cumprod_ prod logsumexp logcumsumexp "
    "mm mv dot vdot bmm addmm addmv addbmm baddbmm _addmm_activation trace convolution "
    "_convolution linalg_lstsq _fft_r2c _fft_c2c _fft_c2r index_add index_add_ scatter_add "
    "scatter_add_ scatter_reduce scatter_reduce_ index_reduce index_reduce_ _embedding_bag "
    "_embedding_bag_forward_only bincount histogram segment_reduce avg_pool2d avg_pool3d "
    "_adaptive_avg_pool2d _adaptive_avg_pool3d col2im linalg_vector_norm norm std var std_mean "
    "var_mean _softmax _log_softmax native_layer_norm native_batch_norm "
    "_native_batch_norm_legit _native_batch_norm_legit_no_training native_group_norm "
    "batch_norm_stats nll_loss_forward nll_loss2d_forward mse_loss smooth_l1_loss huber_loss "
    "soft_margin_loss multi_margin_loss binary_cross_entropy binary_cross_entropy_with_logits "
    "_coalesce _to_dense _sparse_sum _sparse_mm _sparse_addmm index_put index_put_ "
    "_index_put_impl_ put put_ scatter scatter_ _foreach_norm dist _cdist_forward "
    "_pdist_forward _euclidean_dist embedding_dense_backward _embedding_bag_backward renorm "
    "renorm_"
)


def one_call_sums(advice: str) -> dict[str, str]:
    """name -> why for every way torch adds a tensor's values up in one call: the reductions,
    the products (a matmul with ones), the exits to NumPy or Python (`x.numpy().sum()`), the
    sums by other names (a mean, a norm, a loss with reduction="sum", a backward) and the ATen
    operators underneath. `advice` ends each message: "write the levels yourself"."""
    table: dict[str, str] = {}
    for names, why in (
        (_SUM_CALLS, _SUM),
        (_PRODUCT_CALLS, _PRODUCTS),
        (_OUT_CALLS, _OUT),
        (_OTHER_CALLS, _OTHER),
    ):
        for name in names.split():
            table[name] = f"{why}: {advice}"
    for op in _ATEN.split():
        table[f"aten.{op}"] = f"{_SUM if op in _SUM_OPS else _OTHER}: {advice}"
    return table


_SUM_OPS = {"sum", "nansum", "mean", "nanmean", "cumsum", "cumsum_"}


# --- native code the learner's file built -------------------------------------------------------

_NATIVE = (
    "runs native code built outside the installed packages ({path}): a graph compiled with "
    "Inductor and called directly, or a C++ extension, does its work past the check's watch "
    "(no operator of it reaches the dispatcher); write the operations this exercise allows"
)


def executable_mappings() -> set[str]:
    """The files this process has mapped executable (its shared objects), by path; empty where
    /proc cannot say."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
            found.add(parts[5].strip())
    return found


def _installed_roots(extra: tuple[str, ...]) -> tuple[str, ...]:
    # deferred: read only where a check allows a list of operations
    import site
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    roots |= set(site.getsitepackages()) | {site.getusersitepackages()}
    # the system's libraries (libc, the CUDA driver, the toolkit under /usr/local/cuda)
    roots |= {"/usr", "/lib", "/lib32", "/lib64", "/opt"}
    roots |= set(extra)
    # what the import path held before the learner's file ran: packages installed by
    # PYTHONPATH (the GPU machine's wheels in /tmp/site) are installed too; the working
    # directory is not, nor anything the learner's file adds to the path later
    here = os.path.realpath(os.getcwd())
    roots |= {p for p in sys.path if p and os.path.isabs(p) and os.path.realpath(p) != here}
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


class NativeCode:
    """The shared objects mapped since it was made (before the learner's file loads), outside the
    installed packages and the system's libraries. Where a check allows a list of operations,
    the dispatch mode is its only eye, and code compiled by the learner's file runs past it: a red
    team's tree_sum compiled `v.sum()` with Inductor at import through a backend that kept the
    compiled callable, and called that in each call: its C++ kernel takes the tensors and reads
    their memory itself, no operator dispatched (gold, no tree). A C++ extension
    (`torch.utils.cpp_extension.load_inline`) with a loop over `data_ptr` is the same door, and
    so is any library that builds and loads its own objects: all of them map a file that the
    installed packages do not hold. Mappings stay (Python never unloads an extension, and ctypes,
    which could, is refused by name), so reading them after the load and after the calls sees
    one the calls loaded too."""

    def __init__(self, trusted: tuple[str, ...] = ()) -> None:
        self.roots = _installed_roots(trusted)
        self.before = executable_mappings()

    def loaded(self) -> str | None:
        """One line naming the first such object mapped since, or None."""
        for path in sorted(executable_mappings() - self.before):
            real = os.path.realpath(path.removesuffix(" (deleted)"))
            if not real.startswith(self.roots):
                return _one_line(_NATIVE.format(path=path))
        return None
