"""The runner's worker side: the process that serves jobs (`python -m gpulab.runner.worker.serve`),
its CUDA context (cuda.py) and its process plumbing (process.py)."""
