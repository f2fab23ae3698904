# expect: torch.add does the work in one library call
"""torch.add in the wrapper: right answer, no kernel of the learner's."""

import torch


def add(x, y, out):
    torch.add(x, y, out=out)
