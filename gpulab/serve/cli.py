"""`gpulab serve`'s flags and entry: parsed without the `web` extra, which only the server
(gpulab.serve.server) imports, so a missing extra is one line, not a traceback."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from typing import Any

from gpulab.core.params import shown

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_SESSIONS_LIMIT = 64
EXIT_BAD_INPUT = 2


def is_loopback(host: str) -> bool:
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


def add_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="the lab in a browser tab (needs gpulab[web])")
    serve.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; anything "
        "else lets whoever reaches the port run code on this GPU)",
    )
    serve.add_argument("--port", default=str(DEFAULT_PORT), help="port (default 8000; 0: any)")
    serve.add_argument(
        "--max-sessions",
        default="1",
        metavar="N",
        help="browser sessions at once, each with its own worker and CUDA context (default 1)",
    )


def _flags(args: argparse.Namespace) -> tuple[str, int, int] | str:
    """(host, port, max sessions), or a one-line error."""
    host = args.host.strip()
    if not host:
        return "--host is empty; expected an address such as 127.0.0.1"
    try:
        port = int(args.port)
    except ValueError:
        return f"--port {shown(args.port)} is not a port number; expected 0 to 65535"
    if not 0 <= port <= 65535:
        return f"--port {port} is out of range; expected 0 to 65535"
    try:
        sessions = int(args.max_sessions)
    except ValueError:
        sessions = 0
    if not 1 <= sessions <= MAX_SESSIONS_LIMIT:
        return (
            f"--max-sessions {shown(args.max_sessions)} is not allowed; "
            f"expected a whole number from 1 to {MAX_SESSIONS_LIMIT}"
        )
    return host, port, sessions


def app_argv(sample_period: float | None) -> list[str]:
    """The command each session runs: this Python's gpulab, so a venv's install is the one
    served (the data directory travels in GPULAB_DATA_DIR, which the children inherit)."""
    argv = [sys.executable, "-m", "gpulab"]
    if sample_period is not None:
        argv += ["--sample-period", f"{sample_period:g}"]
    return argv


def main(args: argparse.Namespace, sample_period: float | None) -> int:
    flags = _flags(args)
    if isinstance(flags, str):
        sys.stderr.write(f"gpulab: {flags}\n")
        return EXIT_BAD_INPUT
    host, port, sessions = flags
    try:
        from gpulab.serve.server import LabServer
    except ImportError as exc:
        sys.stderr.write(
            f"gpulab: serve needs the web extra ({exc.name or exc} is missing): "
            'pip install "gpulab[web]"\n'
        )
        return EXIT_BAD_INPUT
    warning = exposure_warning(host, port)
    if warning:
        sys.stderr.write(warning + "\n")
    server = LabServer(app_argv(sample_period), host, port, max_sessions=sessions)
    try:
        asyncio.run(server.run())
    except OSError as exc:
        sys.stderr.write(f"gpulab: cannot listen on {host}:{port}: {exc.strerror or exc}\n")
        return EXIT_BAD_INPUT
    print("gpulab serve: stopped", flush=True)
    return 0
