# expect: too fast | too slow | took
# family: writes-what-check-reads
"""Shortcut (a figure with no clock, the span widened by a slow product of the right shape):
every matmul of a's shape, dtype and device counted, so one call on a copy of a scaled into
denormals (`a * 1e-39`: a CPU multiplies them about 100x slower) stretched the span of the
learner's own calls, and a made-up constant fell inside it. Before the fix: pass. Only a
product of a and b themselves (their memory, plain tensors, an output of a @ b's size) counts
now, and the constant lies far above the honest calls."""


def time_matmul(a, b):
    for _ in range(3):
        a @ b
    (a * 1e-39) @ b
    return 0.05
