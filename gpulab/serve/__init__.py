"""`gpulab serve`: the lab in a browser tab. cli.py and access.py (flags, who may connect) need no
extra; server.py and session.py need the `web` extra (textual-serve)."""
