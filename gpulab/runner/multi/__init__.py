"""The runner across GPUs: an experiment's ranks under torchrun
(`python -m gpulab.runner.multi.torchrun`)."""
