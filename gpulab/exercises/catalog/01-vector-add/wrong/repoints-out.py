# expect: pointed `out` at new memory
# family: writes-what-check-reads
"""Cheat: never writes into the caller's buffer; points the `out` tensor object at a new tensor's
memory instead (out.set_), which is the returns-new-tensor mistake in disguise: any other view
of the caller's buffer still holds NaN."""


def vector_add(a, b, out):
    out.set_(a + b)
