"""CUDA C on the CPU: the emulator that runs the kernel exercises where there is no GPU (or no
CuPy), and the `cupy` module it stands behind. `gpulab ex check` installs that module for one
check at a time (session.py); the tests use the same pieces (gpulab.testing.fake_cupy)."""
