"""Who may reach `gpulab serve`: loopback by default, and the warning when bound beyond it.
Needs no `web` extra: the flags (cli.py) and the server (server.py) both ask it."""

from __future__ import annotations

import ipaddress

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def is_loopback(host: str) -> bool:
    """Whether `host` is localhost or a loopback address."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, port: int) -> str | None:
    """The warning printed when the lab is bound beyond this machine (None on loopback)."""
    if is_loopback(host):
        return None
    return (
        f"gpulab serve: WARNING: listening on {host}:{port}, not on loopback. Anyone who can "
        "reach this port can run code on this machine's GPU, as you, with no password. Prefer "
        f"the default ({DEFAULT_HOST}) and `ssh -L {port}:localhost:{port} THIS-HOST`."
    )
