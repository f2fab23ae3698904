# expect: is not among the operations this exercise allows
"""x + y copied into out: torch did the work (the + operator is aten.add underneath)."""


def add(x, y, out):
    out.copy_(x + y)
