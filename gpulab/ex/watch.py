"""`gpulab ex watch`: check the current exercise on every save, move on when it passes.

Uses watchfiles (inotify on Linux, FSEvents on macOS, a poller elsewhere, all behind one async
iterator with debouncing): an editor's save is often several events (write a swap file, rename,
chmod), and the debounce turns them into one check. The directory is watched, not the file,
because editors that save by renaming (vim's default) replace the file the watch would hold.
One warm worker serves every check, so a repeat check costs the check, not a Python start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpulab.core.doc_tags import tagged


def next_exercise(cat: Any, progress: dict[str, Any], inv: Any, after: Any = None) -> Any:
    """The first runnable exercise (after `after`, if given) that is not passing."""
    for ex in cat:
        if after is not None and ex.order <= after.order:
            continue
        p = progress.get(ex.id)
        if (p is None or p.state != "passing") and not ex.unavailable(inv):
            return ex
    return None


async def watch_loop(
    cat: Any,
    ws: Any,
    start: Any,
    *,
    inv: Any,
    checker: Any,
    store: Any,
    say: Callable[[dict[str, Any], str], None],
    debounce_ms: int = 300,
    stop: asyncio.Event | None = None,
) -> int:
    """Check `start`, then again on every save of its file; on a pass, go to the next one.
    Returns the number of checks run. `say(event, text)` prints (JSON event, human text)."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from watchfiles import awatch

    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.ex.session import record
    from gpulab.exercises.outcome import new_seed
    from gpulab.exercises.progress import Progress
    from gpulab.exercises.report import verdict_lines

    current = [start]
    checks = 0

    async def check_current() -> bool:
        nonlocal checks
        ex = current[0]
        path = ws.ensure(ex)
        result, seconds = await checker.check(ex, path, new_seed())
        checks += 1
        progress = record(store, result)
        ws.mark_seen(ex)
        text = "\n".join(verdict_lines(result, name=ex.id))
        say(
            {
                "type": "check",
                "exercise": ex.id,
                "check": result.to_dict(),
                "progress": progress.to_dict(),
                "seconds": seconds,
            },
            text,
        )
        return result.passed

    def announce(ex: Any) -> None:
        path = ws.ensure(ex)
        say(
            {"type": "watching", "exercise": ex.id, "file": str(path)},
            f"\nWatching {path}  ({ex.order}. {ex.title}); save to check, Ctrl-C to stop",
        )

    async def advance() -> bool:
        """After a pass: the next exercise, checked at once. False when none is left."""
        while True:
            nxt = next_exercise(cat, Progress(store).all(), inv, after=current[0])
            if nxt is None:
                say({"type": "done"}, "\nEvery exercise this machine can run passes. Well done.")
                return False
            current[0] = nxt
            announce(nxt)
            if not await check_current():
                return True

    ws.root.mkdir(parents=True, exist_ok=True)
    announce(start)
    if await check_current() and not await advance():
        return checks

    def mine(_change: Any, path: str) -> bool:
        return Path(path).name == current[0].file_name

    async for _changes in awatch(
        ws.root, watch_filter=mine, debounce=debounce_ms, step=50, stop_event=stop, recursive=False
    ):
        if ws.path(current[0]).is_file() and await check_current() and not await advance():
            break
    return checks


def cmd_watch(args: argparse.Namespace) -> int:
    """`gpulab ex watch NAME`: check the learner's file again every time it is saved."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.ex.commands import catalog, machine, runnable, store, workspace
    from gpulab.ex.session import Checker
    from gpulab.exercises.progress import Progress

    cat, ws, inv = catalog(), workspace(args), machine()
    st = store()
    try:
        if args.name:
            start = runnable(args, args.name)
        else:
            start = next_exercise(cat, Progress(st).all(), inv)
            if start is None:
                print("Every exercise this machine can run passes already.")
                return 0

        def say(event: dict[str, Any], text: str) -> None:
            if args.json:
                sys.stdout.write(json.dumps(tagged("event", event), default=str) + "\n")
            else:
                sys.stdout.write(text + "\n")
            sys.stdout.flush()

        async def go() -> int:
            async with Checker(device=args.device, quick=args.quick, inline=args.inline) as checker:
                return await watch_loop(
                    cat,
                    ws,
                    start,
                    inv=inv,
                    checker=checker,
                    store=st,
                    say=say,
                    debounce_ms=args.debounce,
                )

        try:
            asyncio.run(go())
        except KeyboardInterrupt:
            sys.stdout.write("\nStopped watching; your progress is saved.\n")
        return 0
    finally:
        st.close()
