# expect: does the work in one library call | no kernel of yours ran
"""x + y copied into out: torch did the work (the + operator is aten.add underneath)."""


def add(x, y, out):
    out.copy_(x + y)
