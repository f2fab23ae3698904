"""Test doubles and fixtures shared by the tests: the fake NVML (fake_nvml), the fake runner
(fake_runner), the CUDA emulator and fake CuPy, the doctor fixtures."""
