# expect: changed its input a before a matmul it made
# family: writes-what-check-reads
"""Shortcut (a figure with no clock, a itself made slow and put back): a's values scaled into
denormals in place through `a.data` (no version bump), one a @ b on them (about 100x slower
on a CPU, and a and b themselves, so it counts), then a's values copied back before
returning, where the check compared a with its copy. A made-up constant fell inside the span.
Before the fix: pass. On the CPU (where denormals are slow) a and b are compared with their
copies at every matmul the check counts."""


def time_matmul(a, b):
    for _ in range(3):
        a @ b
    keep = a.clone()
    a.data.mul_(1e-39)
    a @ b
    a.data.copy_(keep)
    return 0.05
