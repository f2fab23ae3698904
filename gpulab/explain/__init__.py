"""`gpulab ex explain`: why a learner's kernel runs at the speed it does, one line per finding.

Tier 0 (this package) needs no profiler and, for its static part, no GPU. For each kernel of
the learner's file (found with `ast`, never executed: source.py) it compiles the CUDA C with
NVRTC for the target architecture (nvrtc.py, cached by source hash) and reads

- registers, shared and local memory and spills (cubin.py, ptxas's log);
- theoretical occupancy and what limits it, and the grid's waves (occupancy.py), for the launch
  the grader recorded or, failing that, the one written in the source;
- the PTX's memory instructions: vector width, coalescing and bank conflicts from the
  address arithmetic, atomics in the main loop, an inner loop's FMAs per shared load
  (ptx.py, access.py; the rules, one small function each, in diagnose.RULES);
- the graded figure as a point on this GPU's roofline (roofline.py).

A Triton kernel (`@triton.jit`) is compiled by Triton in a child process from one recorded call
of the learner's function on the exercise's timed inputs (triton_kernels.py, triton_capture.py),
and read by the same rules; its PTX's lines are the learner's file lines.

With `gpu=True` the driver's figures replace the computed ones where it has them: asked in the
learner's warm worker (inputs.device_answers) or in this process (gpulab.experiments.
kernel_device). What a card is drawn from is gathered by inputs.py. Entry points:
`explainer.explain()` for a file's text, `explainer.explain_file()`.

Import cost: this package imports neither torch nor CuPy (the UI may call it), and no textual.
"""
