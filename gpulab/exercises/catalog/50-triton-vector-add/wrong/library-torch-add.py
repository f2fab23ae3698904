# expect: is not among the operations this exercise allows
"""torch.add in the wrapper: right answer, no kernel of the learner's."""

import torch


def add(x, y, out):
    torch.add(x, y, out=out)
