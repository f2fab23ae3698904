# expect: is not among the operations this exercise allows | hands the values to NumPy or Python
"""A tensor's repr prints its values with torch's dispatch modes switched off (torch's own
printing does it, not the learner's code), so no refusal sees them go: with the print threshold
raised, repr(x) is every value as text, summed in Python."""

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
