"""Run one lesson's runnable block with Python's stacks dumped if it hangs.

    python bench/probe_lesson_block.py 14-profiling.md:139 [--after 45]

Prints the block's output and, if it is still running after --after seconds, every thread's
Python stack (faulthandler) before it is ended: where a hanging block waits.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from gpulab.lessons.catalog import load_catalog


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("where")
    p.add_argument("--after", type=float, default=45.0)
    args = p.parse_args()
    name, _, line = args.where.partition(":")
    for lesson in load_catalog():
        if str(lesson.source).endswith(name):
            for block in lesson.code_blocks():
                if block.line == int(line):
                    code = (
                        "import faulthandler, sys\n"
                        f"faulthandler.dump_traceback_later({args.after}, exit=True)\n" + block.code
                    )
                    out = subprocess.run(
                        [sys.executable, "-c", code],
                        capture_output=True,
                        text=True,
                        timeout=args.after + 30,
                    )
                    print(out.stdout[-4000:])
                    print(out.stderr[-8000:], file=sys.stderr)
                    print(f"exit {out.returncode}")
                    return 0
    print(f"no block at {args.where}")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
