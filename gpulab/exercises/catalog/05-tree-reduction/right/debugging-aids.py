# why: logging with stack_info, logging.exception, traceback.format_exc and print_exc, warnings and inspect.signature inside the call: the standard library taking frames for its own use
"""tree-reduction, CORRECT: a pairwise tree with ordinary debugging inside the call: logging
with stack_info and logging.exception, traceback.format_exc / print_exc, warnings.warn shown,
inspect.signature, a generator (must not be refused)."""

import inspect
import logging
import sys
import traceback
import warnings

import torch

_log = logging.getLogger("tree-debug")
_log.addHandler(logging.StreamHandler(sys.stderr))
_log.setLevel(logging.DEBUG)


def _pairs(x):
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        y = x[:half] + x[m - half :]
        if m % 2:
            y = torch.cat((y, x[half : half + 1]))
        x = y
        yield x


def tree_sum(x):
    inspect.signature(tree_sum)
    x = x.reshape(-1)
    if x.numel() == 31:
        _log.debug("odd case", stack_info=True)
        try:
            raise ValueError("probe")
        except ValueError:
            _log.exception("caught")
            traceback.format_exc()
            traceback.print_exc(file=sys.stderr)
        warnings.warn("31 values", RuntimeWarning, stacklevel=2)
    out = x
    for out in _pairs(x):  # noqa: B007 - the last level is the sum
        pass
    return out.reshape(())
