"""Test doubles and fixtures shared by the tests (the fake NVML is gpulab/telemetry/fake.py)."""
