# expect: hands the tensor's values to Python | is not among the operations this exercise allows
# family: escape
"""Tensor.apply_ calls a Python function on every element of a CPU tensor, and the call never
reaches torch's dispatcher: the watch sees no operator to refuse. The sum is a Python loop over
the values, handed out one by one (the exit to Python that x.tolist() would be)."""


def tree_sum(x):
    acc = [0.0]

    def add(v):
        acc[0] += v
        return v

    x.cpu().clone().apply_(add)
    return acc[0]
