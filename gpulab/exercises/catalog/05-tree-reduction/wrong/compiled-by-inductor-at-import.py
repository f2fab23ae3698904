# expect: runs native code built outside the installed packages
# family: escape
"""Cheat: at import, `v.sum()` compiled by torch.compile with a backend of its own that hands
the graph to Inductor and keeps what Inductor returns; each call runs that callable directly.
Inductor's C++ kernel takes the tensors and reads their memory itself, so no operator reaches
the dispatcher and the allowlist sees nothing (torch.compile's own entry runs eager under a
dispatch mode, and is refused there). Passed gold with no tree: the compiled object it maps
lies outside the installed packages, and the check names it."""

import torch
from torch._inductor.compile_fx import compile_fx

_kept = []


def _backend(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)
    _kept.append(compiled)
    return compiled


torch.compile(lambda v: v.sum(), backend=_backend, dynamic=True)(torch.ones(37))


def tree_sum(x):
    return _kept[0](x.numel(), x)[0]
