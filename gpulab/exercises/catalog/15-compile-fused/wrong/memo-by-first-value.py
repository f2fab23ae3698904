# expect: outside the compiled graph | differ from the chain | keep an answer | is the compiled function the one that runs
# family: memo
"""Memo of content: on the large input the answer is kept per (buffer, first value, last value),
computed by the eager chain when the key is new; small sizes go through torch.compile (the graph
count). The check rewrites every element of the input before every call after the first, each by
its own factor, so the key is new every time: the memo never answers, and every large call runs
the chain eagerly, outside any compiled graph (on a CPU the profiled calls show its operators; on
a GPU it saves nothing over eager in the timed rounds). Had it answered, the answer would differ
from the chain's on the new values."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)
_kept = {}


def run(x, w):
    if x.numel() < 1 << 20:
        return fast(x, w)
    key = (x.data_ptr(), w.data_ptr(), float(x[0]), float(x[-1]))
    out = _kept.get(key)
    if out is None:
        out = _kept[key] = chain(x, w)
    return out
