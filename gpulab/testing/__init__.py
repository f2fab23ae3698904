"""Test doubles and fixtures shared by the tests (fakes of NVML live in gpulab/telemetry/fake.py)."""
