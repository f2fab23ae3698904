# expect: reads or switches off torch's function and dispatch modes
# family: timed-vs-checked
"""Shortcut (timed told from checked, by a mode). GPU-only: not run on the CPU box. The check
records its first round under a torch function mode and times the later rounds bare, so the
three-stream pipeline runs only while a mode is on (the recorded call, which shows the overlap)
and the plain serial loop otherwise: the simplest code, graded on the recorded call's overlap.
Stopped before any input is made, on every machine: the source names torch's mode stack
(gpulab.exercises.reach, read by run_check for every exercise)."""

from __future__ import annotations

import torch

_streams: dict[str, torch.cuda.Stream] = {}


def _serial(chunks, outs, step):
    for chunk, out in zip(chunks, outs, strict=True):
        out.copy_(step(chunk.to("cuda")))


def pipeline(chunks, outs, step):
    if not chunks:
        return
    if not torch._C._is_torch_function_mode_enabled():
        _serial(chunks, outs, step)
        return
    if not _streams:
        _streams.update(up=torch.cuda.Stream(), down=torch.cuda.Stream())
    main, up, down = torch.cuda.current_stream(), _streams["up"], _streams["down"]
    up.wait_stream(main)
    for i, chunk in enumerate(chunks):
        with torch.cuda.stream(up):
            x = chunk.to("cuda", non_blocking=True)
        main.wait_stream(up)
        x.record_stream(main)
        y = step(x)
        down.wait_stream(main)
        with torch.cuda.stream(down):
            outs[i].copy_(y, non_blocking=True)
        y.record_stream(down)
    down.synchronize()
