# expect: could not convert string to float: '  ...'
# family: escape
"""A tensor's repr prints its values with torch's dispatch modes switched off (torch's own
printing does it, not the learner's code), so no refusal sees them go: with the print threshold
raised, repr(x) would be every value as text, summed in Python. Inside a checked call a tensor
prints with torch's default options whatever the learner set (a debugging print still works):
a large input shows a few values and "...", and the parse fails on it."""

import torch


def tree_sum(x):
    torch.set_printoptions(threshold=10**12, precision=12, sci_mode=True, linewidth=10**9)
    try:
        text = repr(x.reshape(-1))
    finally:
        torch.set_printoptions(profile="default")
    body = text[text.index("[") + 1 : text.rindex("]")]
    total = 0.0
    for v in body.replace("\n", " ").split(","):
        if v.strip():
            total += float(v)
    return total
