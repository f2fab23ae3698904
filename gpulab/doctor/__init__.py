"""`gpulab doctor`: active checks of the GPU setup, each with its fix.

gather.py collects facts (NVML here; torch and CuPy in the probe subprocess, probe.py, and in a
real worker), checks.py judges them (pure: tests write broken setups down as facts), cli.py prints.
"""
