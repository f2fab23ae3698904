# expect: changed torch.set_num_threads
# family: writes-what-check-reads
"""Shortcut (slowing what is timed beside it): torch's thread count set to 1 at import, so the
yardstick's rounds run on one thread, while each call sets it back to the machine's for its own
work and to 1 again as it returns. Twice the reference's work graded silver against a yardstick
on one thread (2 cores; on 8 it is gold): the grade measured the setting, not the tree."""

import torch

_cores = torch.get_num_threads()
torch.set_num_threads(1)


def _levels(x):
    x = x.reshape(-1)
    while x.numel() > 1:
        m = x.numel()
        half = m // 2
        y = x[:half] + x[m - half :]
        if m % 2:
            y = torch.cat((y, x[half : half + 1]))
        x = y
    return x.reshape(())


def tree_sum(x):
    torch.set_num_threads(_cores)
    try:
        _levels(x)  # the work twice: bronze speed on its own
        return _levels(x)
    finally:
        torch.set_num_threads(1)
