"""Names the fake CuPy's record of a call (cupy_module) holds beside its kernels' names, for the
grader to word (gpulab.exercises.kernel_trace): no kernel can bear one (none is a C name)."""

RECORD_ENDED = "gpulab-emulator: record ended"  # the call ended or replaced the record
