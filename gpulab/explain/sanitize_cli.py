"""`gpulab ex check NAME --sanitize`: Tier 2, compute-sanitizer over the learner's kernel.

memcheck, then racecheck, on a small case with the memory pools off (see sanitize.py), and the
first error in one line: kernel, thread, block, address and the line of the learner's file.
gpulab.ex.cli hands `check --sanitize` here instead of grading (the option is registered by
gpulab.explain.cli.register).
"""

from __future__ import annotations

import argparse
import sys

# Bytes of input and output for the sanitizer's case: the tools slow a kernel 10 to 100 times,
# and racecheck reports each hazard; a few hundred blocks show a missing guard or barrier.
SANITIZE_FILL = 256 << 10


def cmd_sanitize(args: argparse.Namespace) -> int:
    """memcheck, then racecheck, on a small case; 0 when both are clean, 1 otherwise."""
    from gpulab.core.errors import BadInput  # deferred: loaded when the command runs
    from gpulab.ex.commands import _file, catalog, emit_json, machine  # deferred: as above
    from gpulab.explain import sanitize, tools  # deferred: loaded when the command runs
    from gpulab.explain.source import scan  # deferred: loaded when the command runs

    ex = catalog().get(args.name)
    path = _file(args, ex)
    if not path.is_file():
        raise BadInput(f"no file {path}")
    code_lines = {
        k.name: k.code_line
        for k in scan(path.read_text(encoding="utf-8")).kernels
        if k.code_line is not None
    }
    target = tools.target_argv(path, exercise=ex.id, fill=SANITIZE_FILL, calls=1)
    say = None if args.json else (lambda s: print(f"  {s}", file=sys.stderr))
    try:
        result = sanitize.sanitize(target, code_lines=code_lines, on_progress=say)
    except RuntimeError as exc:
        why = str(exc)
        if ex.emulated(machine()):  # where it cannot run, the emulator checks the same things
            why += (
                f"; here `gpulab ex check {ex.id}` runs your kernel on the CUDA emulator, which "
                "stops at the first out-of-bounds access or shared-memory race and says where"
            )
        raise BadInput(why) from None
    if args.json:
        emit_json({"exercise": ex.id, "file": str(path), "sanitize": result.to_dict()})
    else:
        print(f"sanitize {ex.id}: {path.name}, a small case, memory pools off")
        print("\n".join(result.lines()))
        if result.first is not None and result.first.file_line is None:
            print("  (a line number needs the kernel source as a string constant in your file)")
    return 0 if result.no_errors else 1
