# expect: _len_torch_function_stack
# family: timed-vs-checked
"""Cheat: writes the tree only while the check's TorchFunctionMode is on the stack (correctness
cases and the one watched call); the timed calls, which run without the refusals, use torch.sum."""

import torch


def _tree(x):
    x = x.reshape(-1)
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        y = x[:half] + x[m - half :]
        x = torch.cat((y, x[half : half + 1])) if m % 2 else y
    return x.reshape(())


def tree_sum(x):
    if torch._C._len_torch_function_stack() == 0:  # nobody is watching
        return torch.sum(x)
    return _tree(x)
