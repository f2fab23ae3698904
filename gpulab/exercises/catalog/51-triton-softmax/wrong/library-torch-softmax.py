# expect: is not among the operations this exercise allows
"""torch.softmax copied into out: right answer, no kernel of the learner's."""

import torch


def softmax(x, out):
    out.copy_(torch.softmax(x, dim=1))
