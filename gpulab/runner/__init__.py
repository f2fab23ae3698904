"""The runner: experiments in a worker process. client/ (RunnerClient, in the caller's process),
worker/ (the worker process, which runs each job with `gpulab.experiments.inline`), multi/ (ranks
under torchrun), protocol.py (the frames both sides speak) and cli.py (`gpulab run`)."""
