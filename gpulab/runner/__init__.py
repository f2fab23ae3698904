"""The runner: experiments in a worker process. client/ (RunnerClient, in the caller's process),
worker/ (the worker process), multi/ (ranks under torchrun), and what both sides share: protocol.py
(frames), classify.py (an exception to a failure kind), inline.py (a job in this process), and
cli.py (`gpulab run`)."""
