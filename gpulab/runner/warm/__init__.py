"""The learner's warm worker for the CLI: a runner kept alive between `gpulab ex` commands,
reached through a Unix socket only its user can open, stopped after a while without work."""
