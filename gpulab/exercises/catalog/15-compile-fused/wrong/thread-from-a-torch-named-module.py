# expect: starts another thread or process
# family: escape
"""The chain runs eagerly on the large input in a worker thread the profiler does not follow. The
thread is started from a function exec'd into globals named "torch._inductor.async_compile":
the watch lets torch.compile's own code start threads, and knows it by that name."""

from concurrent.futures import ThreadPoolExecutor

import torch

_pool = ThreadPoolExecutor(1)
_ns = {"__name__": "torch._inductor.async_compile", "_pool": _pool}
exec("def submit(f, *args):\n    return _pool.submit(f, *args).result()\n", _ns)
_submit = _ns["submit"]


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    if x.numel() < 1 << 20:
        return fast(x, w)
    return _submit(chain, x, w)
