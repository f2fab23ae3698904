# expect: pageable host memory
# family: loose-property
"""Wrong (a shortcut): brings each output back with .cpu() and copies it into outs on the host:
right values, no stream or wait to think about, and every copy back blocks the host in pageable
memory."""

from __future__ import annotations


def pipeline(chunks, outs, step):
    for chunk, out in zip(chunks, outs, strict=True):
        out.copy_(step(chunk.to("cuda", non_blocking=True)).cpu())
