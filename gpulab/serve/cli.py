"""`gpulab serve`'s flags and entry: parsed without the `web` extra, which only the server
(gpulab.serve.server) imports, so a missing extra is one line, not a traceback."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpulab.core.errors import BadInput
from gpulab.core.params import shown
from gpulab.serve.access import DEFAULT_HOST, DEFAULT_PORT, exposure_warning

MAX_SESSIONS_LIMIT = 64


def add_parser(sub: Any) -> None:
    """Register `gpulab serve` and its host, port and session options."""
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


def _flags(args: argparse.Namespace) -> tuple[str, int, int]:
    """(host, port, max sessions); BadInput names the flag."""
    host = args.host.strip()
    if not host:
        raise BadInput("--host is empty; expected an address such as 127.0.0.1")
    try:
        port = int(args.port)
    except ValueError:
        raise BadInput(
            f"--port {shown(args.port)} is not a port number; expected 0 to 65535"
        ) from None
    if not 0 <= port <= 65535:
        raise BadInput(f"--port {port} is out of range; expected 0 to 65535")
    try:
        sessions = int(args.max_sessions)
    except ValueError:
        sessions = 0
    if not 1 <= sessions <= MAX_SESSIONS_LIMIT:
        raise BadInput(
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


def main(args: argparse.Namespace) -> int:
    """`args.sample_period`: the checked --sample-period (seconds or None), for each session."""
    host, port, sessions = _flags(args)
    try:
        from gpulab.serve.server import LabServer  # deferred: the `web` extra (textual-serve)
    except ImportError as exc:
        raise BadInput(
            f'serve needs the web extra ({exc.name or exc} is missing): pip install "gpulab[web]"'
        ) from None
    warning = exposure_warning(host, port)
    if warning:
        sys.stderr.write(warning + "\n")
    import asyncio  # deferred: the event loop loads when the server starts

    server = LabServer(app_argv(args.sample_period), host, port, max_sessions=sessions)
    try:
        asyncio.run(server.run())
    except OSError as exc:
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    print("gpulab serve: stopped", flush=True)
    return 0
