"""`gpulab` command line: the TUI by default; info, list, run, bench, lessons, serve, ...

One parser. Each command's CLI is the `cli.py` of the package that does its work, with
`add_parser(sub)` (its subcommand, registered here in `COMMANDS` order) and `main(args)`:

    info        telemetry/cli.py       store       store/cli.py
    list        experiments/cli.py     history     history/cli.py
    run         runner/cli.py          exercises   ex/cli.py (alias ex)
    bench       benchmark/cli.py       doctor      doctor/cli.py
    lessons     lessons/cli.py         serve       serve/cli.py
    predictions history/predictions_cli.py

This module holds the parser, the TUI (no command) and `completion` (the parser is its input).
Every start imports every command's cli.py, so those import their work when they run.
Bad input from a person (unknown experiment or parameter, a malformed or out-of-range value)
is a `BadInput` raised anywhere below `main`, which prints it as one line on stderr and exits
with status 2, never a traceback; any other `GpulabError` (a store that cannot be used) is one
line and status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from gpulab import __version__, completion
from gpulab.benchmark import cli as bench_cli
from gpulab.core.errors import EXIT_BAD_INPUT, BadInput, GpulabError
from gpulab.core.params import parse_plain_number, shown
from gpulab.doctor import cli as doctor_cli
from gpulab.ex import cli as ex_cli
from gpulab.ex import profile as ex_profile
from gpulab.experiments import cli as experiments_cli
from gpulab.explain import cli as explain_cli
from gpulab.history import cli as history_cli
from gpulab.history import predictions_cli
from gpulab.lessons import cli as lessons_cli
from gpulab.runner import cli as runner_cli
from gpulab.serve import cli as serve_cli
from gpulab.store import cli as store_cli
from gpulab.telemetry import cli as telemetry_cli

SAMPLE_PERIOD_ENV = "GPULAB_SAMPLE_PERIOD"
# The telemetry sampler's range (gpulab.telemetry.sampler.MIN_INTERVAL / MAX_INTERVAL; a test
# keeps the two equal without importing telemetry here).
SAMPLE_PERIOD_MIN, SAMPLE_PERIOD_MAX = 0.25, 5.0

# Every command's module, in the order `gpulab --help` lists them (completion last).
COMMANDS = (
    telemetry_cli,
    experiments_cli,
    runner_cli,
    bench_cli,
    lessons_cli,
    store_cli,
    history_cli,
    predictions_cli,
    ex_cli,
    doctor_cli,
    serve_cli,
)
_MAIN = "_command_main"  # the namespace attribute that holds the chosen command's main


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        sys.stderr.write(f"gpulab: {message} (see gpulab --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    """The `gpulab` parser with every command registered on it."""
    p = _Parser(prog="gpulab", description="A terminal lab for learning GPU computing.")
    p.add_argument("--version", action="version", version=f"gpulab {__version__}")
    p.add_argument("--data-dir", help="where progress and run history live (env GPULAB_DATA_DIR)")
    p.add_argument(
        "--sample-period",
        metavar="SECONDS",
        help=f"how often the TUI reads the GPU's telemetry, {SAMPLE_PERIOD_MIN:g}-"
        f"{SAMPLE_PERIOD_MAX:g} s (default 0.5; env {SAMPLE_PERIOD_ENV})",
    )
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    for module in COMMANDS:
        _register(sub, module.add_parser, module.main)
    explain_cli.register(sub)  # `gpulab ex explain`: a verb of `ex` that gpulab.explain owns
    ex_profile.register(sub)  # `gpulab ex profile`: torch.profiler's view of a learner's step
    _register(sub, _add_completion, _completion)
    return p


def _register(sub: Any, add_parser: Any, main: Any) -> None:
    """Add a command's subparser(s) (aliases included) and remember which main runs them."""
    before = set(sub.choices)
    add_parser(sub)
    for name in set(sub.choices) - before:
        sub.choices[name].set_defaults(**{_MAIN: main})


def main(argv: Sequence[str] | None = None) -> int:
    """Run `gpulab` with `argv`: a gpulab error is one line on stderr and its exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.data_dir:
            os.environ["GPULAB_DATA_DIR"] = args.data_dir
        if args.command is None:
            return _tui(_checked(sample_period(args.sample_period)))
        # Checked even where it does not apply; `gpulab serve` passes it to its sessions.
        args.sample_period = _checked(
            None if args.sample_period is None else sample_period(args.sample_period)
        )
        return getattr(args, _MAIN)(args)
    except GpulabError as exc:  # BadInput: exit 2; a fault (the store, say): exit 1
        sys.stderr.write(f"gpulab: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("gpulab: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


def _checked(period: float | None | str) -> float | None:
    if isinstance(period, str):
        raise BadInput(period)
    return period


def sample_period(flag: str | None) -> float | None | str:
    """The telemetry period from --sample-period or the environment: seconds, None (the
    default), or a one-line error naming the flag (or variable), the value and the range."""
    name, raw = "--sample-period", flag
    if raw is None:
        name, raw = SAMPLE_PERIOD_ENV, os.environ.get(SAMPLE_PERIOD_ENV)
        if raw is None or not raw.strip():
            return None
    allowed = f"allowed: {SAMPLE_PERIOD_MIN:g} to {SAMPLE_PERIOD_MAX:g} seconds"
    try:
        value = parse_plain_number(raw)
    except ValueError:
        return f"{name} {shown(raw)} is not a number of seconds; {allowed}"
    if not SAMPLE_PERIOD_MIN <= value <= SAMPLE_PERIOD_MAX:
        return f"{name} {raw.strip()[:40]} is out of range; {allowed}"
    return value


def _tui(period: float | None = None) -> int:
    from gpulab.app.app import GpuLabApp  # deferred: textual, which no other command needs

    app = GpuLabApp(sample_period=period)
    app.run()
    # Textual has printed the traceback by now; the status must say it too (a script, a CI job
    # or a shell's `&&` reads it).
    code = app.return_code or 0
    if code:
        sys.stderr.write("gpulab: the lab stopped on an internal error (traceback above)\n")
    return code


def _add_completion(sub: Any) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)")
    p.add_argument("shell", choices=completion.SHELLS, help="; ".join(completion.INSTALL.values()))


def _completion(args: argparse.Namespace) -> int:
    text = completion.script(build_parser(), args.shell)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
