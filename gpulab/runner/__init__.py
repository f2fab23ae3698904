"""The runner: experiments in a worker process (client.py, worker.py), and the shared event schema."""
