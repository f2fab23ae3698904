"""The runner's client side, in the caller's process: `RunnerClient` (runner_client.py) and the
collaborators it owns (supervisor.py, frames.py, spare.py), a worker's handle and a job."""
