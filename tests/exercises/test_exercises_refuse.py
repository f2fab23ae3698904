"""gpulab.exercises.refuse: an exercise that teaches an algorithm refuses the library's one call.

The table for a sum (tree-reduction's REFUSE) against the shortcuts a learner could take, and
against the legitimate code that must still pass: pairwise adds, torch.cat, padding, printing.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpulab.exercises.refuse import RefusedCall, call, one_call_sums, refusing  # noqa: E402

TABLE = one_call_sums("write the levels yourself (pairwise adds)")
F = torch.nn.functional


def _x(n: int = 1001) -> torch.Tensor:
    return torch.arange(1, n + 1, dtype=torch.float32) * ((-1) ** torch.arange(n))


def _tree(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        y = x[:half] + x[m - half :]
        if m % 2:
            y = torch.cat((y, x[half : half + 1]))
        x = y
    return x.reshape(())


def _pairs(x: torch.Tensor) -> torch.Tensor:
    while x.numel() > 1:
        if x.numel() % 2:
            x = F.pad(x, (0, 1))
        x = x[0::2] + x[1::2]
    return x[0]


def _accumulated_backward(x: torch.Tensor) -> torch.Tensor:
    w = torch.zeros(1, requires_grad=True)
    (w.expand(x.numel()) * x).backward(torch.ones_like(x))
    return w.grad


SHORTCUTS = {
    "torch.sum": (lambda x: torch.sum(x), "torch.sum does the whole reduction in one call"),
    "x.sum()": (lambda x: x.sum(), "torch.Tensor.sum does the whole reduction"),
    "x.sum(dim) over pairs": (lambda x: x[:1000].view(-1, 2).sum(1), "torch.Tensor.sum"),
    "x.mean() * n": (lambda x: x.mean() * x.numel(), "torch.Tensor.mean"),
    "cumsum": (lambda x: x.cumsum(0)[-1], "torch.Tensor.cumsum"),
    "x @ ones": (lambda x: x @ torch.ones_like(x), "sums products in one call"),
    "torch.dot": (lambda x: torch.dot(x, torch.ones_like(x)), "torch.dot"),
    "torch.mm": (lambda x: torch.mm(x[None], x[:, None] * 0 + 1), "torch.mm sums products"),
    "autograd.grad": (
        lambda x: (lambda w: torch.autograd.grad(w.expand(x.numel()) * x, w, torch.ones_like(x)))(
            torch.zeros(1, requires_grad=True)
        ),
        "torch.autograd.grad reduces",
    ),
    "einsum": (lambda x: torch.einsum("i->", x), "torch.einsum"),
    "F.linear": (lambda x: F.linear(x, torch.ones(1, x.numel())), "linear"),
    "x.numpy().sum()": (lambda x: x.numpy().sum(), "torch.Tensor.numpy hands the values"),
    "np.asarray(x)": (lambda x: np.asarray(x).sum(), "torch.Tensor.__array__"),
    "sum(x.tolist())": (lambda x: sum(x.tolist()), "torch.Tensor.tolist"),
    "l1_loss, reduction=sum": (
        lambda x: F.l1_loss(x.clamp(min=0), torch.zeros_like(x), reduction="sum"),
        "l1_loss",
    ),
    "fft": (lambda x: torch.fft.fft(x)[0].real, "torch.fft.fft reaches aten._fft_r2c"),
    "torch.ops.aten.sum": (lambda x: torch.ops.aten.sum.default(x), "aten.sum does"),
    "index_put_ accumulate": (
        lambda x: torch.zeros(1).index_put_(
            (torch.zeros(x.numel(), dtype=torch.long),), x, accumulate=True
        ),
        "index_put_",
    ),
    "scatter_ reduce=add": (
        lambda x: torch.zeros(1).scatter_(
            0, torch.zeros(x.numel(), dtype=torch.long), x, reduce="add"
        ),
        "scatter_",
    ),
    "autograd backward": (_accumulated_backward, "torch.Tensor.backward"),
    "exp/prod/log": (lambda x: torch.exp(x.double() / 1e4).prod().log() * 1e4, "prod"),
    "sparse coalesce": (
        lambda x: torch.sparse_coo_tensor(
            torch.zeros(1, x.numel(), dtype=torch.long), x, (1,)
        ).coalesce(),
        "coalesce",
    ),
}


@pytest.mark.parametrize("name", list(SHORTCUTS))
def test_every_one_call_sum_is_refused_with_one_line(name):
    fn, words = SHORTCUTS[name]
    with refusing(TABLE) as calls, pytest.raises(RefusedCall) as info:
        fn(_x())
    message = str(info.value)
    assert calls == [message]
    assert words in message and "\n" not in message
    assert message.endswith("write the levels yourself (pairwise adds)")


def test_a_refusal_is_a_check_error():
    from gpulab.exercises.api import CheckError

    assert issubclass(RefusedCall, CheckError)


def test_the_example_message_reads_as_a_sentence():
    with pytest.raises(RefusedCall) as info, refusing(TABLE):
        torch.sum(_x())
    assert str(info.value) == (
        "torch.sum does the whole reduction in one call: write the levels yourself (pairwise adds)"
    )


LEGITIMATE = {
    "halves and cat": _tree,
    "pairs and padding": _pairs,
    "printing and item": lambda x: (repr(x), str(x[:5]), f"{_tree(x).item():.3f}", float(_tree(x))),
    "checks on the values": lambda x: (
        torch.isfinite(x).all(),
        torch.allclose(x, x),
        x.abs().max(),
    ),
    "indexed assignment": lambda x: torch.zeros(x.numel()).index_put_(
        (torch.arange(x.numel()),), x
    ),
    "setitem and scatter without reduce": lambda x: (
        torch.zeros(x.numel()).scatter_(0, torch.arange(x.numel()), x),
        torch.zeros(4).__setitem__(slice(0, 2), 1.0),
    ),
    "views and unfold": lambda x: x[:1000].unfold(0, 2, 2)[:, 0] + x[:1000].view(-1, 2)[:, 1],
}


@pytest.mark.parametrize("name", list(LEGITIMATE))
def test_legitimate_tree_code_passes(name):
    x = _x()
    with refusing(TABLE) as calls:
        LEGITIMATE[name](x)
    assert calls == []
    with refusing(TABLE):
        got = _tree(x)
    assert float(got) == pytest.approx(float(x.double().sum()))


def test_a_refusal_the_learner_catches_is_still_recorded():
    def sneaky(x):
        try:
            return x.sum()
        except Exception:  # noqa: BLE001 - the learner hiding the refusal, on purpose
            return _tree(x)

    with pytest.raises(RefusedCall, match="torch.Tensor.sum does"):
        call(TABLE, sneaky, _x())

    def raises_something_else(x):
        try:
            return x.sum()
        except Exception:  # noqa: BLE001 - the learner hiding the refusal, on purpose
            raise ValueError("hidden") from None

    with pytest.raises(RefusedCall, match="torch.Tensor.sum does"):
        call(TABLE, raises_something_else, _x())
    assert float(call(TABLE, _tree, _x())) == pytest.approx(float(_x().double().sum()))
    with pytest.raises(ValueError, match="mine"):
        call(TABLE, lambda x: (_ for _ in ()).throw(ValueError("mine")), _x())


def test_a_nested_block_shares_the_enclosing_watch():
    with refusing(TABLE) as outer:
        depth = torch._C._len_torch_function_stack()
        with refusing({"torch.sum": TABLE["torch.sum"]}) as inner:
            assert inner is outer
            assert torch._C._len_torch_function_stack() == depth
        with refusing({"torch.prod": "is not in the outer table's words"}) as other:
            assert other is not outer
            with pytest.raises(RefusedCall):
                torch.prod(_x())
            assert other and not outer


def test_the_modes_are_gone_after_the_block_even_when_the_learner_tampered():
    from torch.overrides import TorchFunctionMode

    f0, d0 = torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()
    with refusing(TABLE) as calls:
        TorchFunctionMode().__enter__()  # left pushed by the learner's code
    assert calls == []
    assert torch._C._len_torch_function_stack() == f0
    assert torch._C._len_torch_dispatch_stack() == d0
    with refusing(TABLE) as calls:
        torch._C._pop_torch_function_stack()  # the learner removed the watch...
        with pytest.raises(RefusedCall, match="^aten.sum does"):
            torch.sum(_x())  # ...and the operators underneath still see the sum
    assert calls[0].startswith("aten.sum") and "removed the check's watch" in calls[-1]
    assert torch._C._len_torch_function_stack() == f0
    assert torch._C._len_torch_dispatch_stack() == d0
    torch.sum(_x())  # nothing is refused any more


def test_every_name_in_the_table_is_a_real_function_or_operator():
    from gpulab.exercises.refuse import resolve

    missing = []
    for key in TABLE:
        if key.startswith("aten."):
            if not hasattr(torch.ops.aten, key.removeprefix("aten.")):
                missing.append(key)
        elif resolve(key) is None:
            missing.append(key)
    assert not missing, f"names torch does not resolve (typos?): {missing}"


def test_importing_refuse_imports_no_torch():
    code = "import sys, gpulab.exercises.refuse\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_memory_shared_with_numpy_while_the_file_loads_is_refused(tmp_path) -> None:
    """A tensor and NumPy made to share memory at import outlive it: a red team's tree_sum made
    torch.from_numpy(buffer) at import, copied x into it in each call and summed the buffer with
    NumPy (gold, no tree). While a learner's file loads, each way in and out is refused (and
    recorded, so a file that catches it still fails); a copy is not, nor a library's own use as
    the file imports it, and everything is put back after."""
    from gpulab.exercises.refuse import aliases_refused
    from gpulab.exercises.sandbox import forget, fresh_name, load_text, refuse_walks

    refuse_walks()  # as in a check: the refusals' own frame reads must pass the audit hook

    lib = tmp_path / "a_library.py"
    lib.write_text("import numpy as np, torch\nTABLE = torch.from_numpy(np.arange(4.0))\n")
    sys.path.insert(0, str(tmp_path))
    before = (torch.from_numpy, torch.Tensor.numpy, torch.as_tensor, torch.from_file)
    shares = {
        "from_numpy": "torch.from_numpy(np.zeros(8, np.float32))",
        "numpy": "torch.zeros(8).numpy()",
        "array": "np.asarray(torch.zeros(8))",
        "frombuffer": "torch.frombuffer(bytearray(32), dtype=torch.float32)",
        "as_tensor": "torch.as_tensor(np.zeros(8))",
        "from_file": f"torch.from_file({str(tmp_path / 'f')!r}, shared=True, size=8)",
        "caught": "A = None\ntry:\n    torch.from_numpy(np.zeros(2))\nexcept Exception:\n    A = 1",
    }
    copies = (
        "import a_library\n"
        "A = torch.tensor(np.zeros(8, np.float32))\nB = torch.as_tensor([1.0, 2.0])\n"
        "C = torch.zeros(8).tolist()\nD = a_library.TABLE.sum()\n"
    )
    try:
        for name, line in shares.items():
            calls: list[str] = []
            text = f"import numpy as np\nimport torch\n{line}\n"
            module = None
            with aliases_refused(calls), contextlib.suppress(RefusedCall):
                module = load_text(text, tmp_path / "l.py", fresh_name("learner", name))
            forget(module)
            assert calls and "while your file loads makes a tensor and NumPy" in calls[0], name
        calls = []
        with aliases_refused(calls):
            module = load_text(
                "import numpy as np\nimport torch\n" + copies,
                tmp_path / "c.py",
                fresh_name("learner", "copies"),
            )
        forget(module)
        assert calls == [] and module.B.tolist() == [1.0, 2.0]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("a_library", None)
    assert (torch.from_numpy, torch.Tensor.numpy, torch.as_tensor, torch.from_file) == before


def test_a_thread_another_thread_of_ours_starts_during_a_call_is_not_the_calls():
    """The stand-ins are process-wide: a thread the worker's (or a harness's) own thread starts
    while a call runs is not the call's, and under load one was charged to it. From the watched
    thread, or from any thread whose stack holds a frame of the learner's, it is refused."""
    import threading

    from gpulab.exercises.refuse import one_thread

    def starts_one() -> str:
        t = threading.Thread(target=lambda: None)
        try:
            t.start()
        except RefusedCall:
            return "refused"
        t.join()
        return "started"

    learners = {"__name__": "_gpulab_learner_7", "starts_one": starts_one}
    exec("def as_learner():\n    return starts_one()\n", learners)  # a frame of the learner's
    seen: dict[str, str] = {}
    gates = {n: threading.Event() for n in ("ours", "learner's")}

    def waiting(name: str, fn) -> None:
        gates[name].wait(30)
        seen[name] = fn()

    # started before the block (as a worker's threads are), released inside it
    threads = [
        threading.Thread(target=waiting, args=("ours", starts_one)),
        threading.Thread(target=waiting, args=("learner's", learners["as_learner"])),
    ]
    for t in threads:
        t.start()
    with one_thread([], exits=False):
        seen["watched"] = starts_one()
        for gate in gates.values():
            gate.set()
        for t in threads:
            t.join(30)
    assert seen == {"watched": "refused", "ours": "started", "learner's": "refused"}, seen
