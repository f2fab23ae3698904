"""`gpulab exercises` / `gpulab ex`: list, check, watch, hint, reset, solution, ladder, explain,
worker.

Exit codes: 0 done (a check passed), 1 a check failed, 2 bad input (unknown exercise, a missing
file, a bad seed, an exercise this machine cannot run), one line on stderr, never a traceback;
130 interrupted. `--json` prints one JSON object (`watch`: one per line, per check).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpulab.core.errors import EXIT_BAD_INPUT, BadInput
from gpulab.core.params import SEED_MAX
from gpulab.ex.commands import (
    _file,
    catalog,
    emit_json,
    machine,
    runnable,
    store,
    workspace,
)

EXIT_FAILED = 1


def _seed(text: str) -> int:
    try:  # int() reads other scripts' digits too: ASCII only, as everywhere in gpulab
        value = int(text, 0) if text.isascii() else -1
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to {SEED_MAX}")
    return value


def _device(text: str) -> int:
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.core.params import parse_index

    try:
        return parse_index(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a GPU index: 0, 1, ...") from None


def add_parser(sub: Any) -> None:
    """Register `exercises` (alias `ex`) on gpulab's subparsers."""
    ex = sub.add_parser(
        "exercises", aliases=["ex"], help="exercises: write GPU code, get it graded"
    )
    _common(ex, top=True)
    acts = ex.add_subparsers(dest="ex_command", parser_class=type(ex))
    acts.add_parser("list", help="the exercises, in order, with your progress")
    # its --sanitize option is explain's (gpulab.explain.cli.register adds it, and runs it)
    check = acts.add_parser("check", help="check, time and grade your file")
    check.add_argument("name", help="exercise id, folder name or number")
    check.add_argument("--seed", type=_seed, help="replay the input sets of this seed")
    check.add_argument(
        "--predict",
        metavar="VALUE",
        help="say first what your timed call will do: its time (2ms, 300us), its percent of "
        "the ceiling (40%%) or who wins, you or the library; shown beside the measurement",
    )
    watch = acts.add_parser("watch", help="check on every save; move on when it passes")
    watch.add_argument("name", nargs="?", help="start here (default: the first not passing)")
    watch.add_argument("--debounce", type=int, default=300, help=argparse.SUPPRESS)
    ladder = acts.add_parser("ladder", help="the kernel from naive to the expert's, and your rung")
    ladder.add_argument("name", help="exercise id, folder name or number")
    ladder.add_argument(
        "--figure",
        type=float,
        metavar="VALUE",
        help="place this figure (in the exercise's metric) instead of your latest graded one",
    )
    ladder.add_argument(
        "--measure",
        action="store_true",
        help="time every rung on this GPU first (a minute or so) and keep the figures",
    )
    worker = acts.add_parser("worker", help="your warm worker for checks: is it there (--stop)")
    worker.add_argument("--stop", action="store_true", help="stop it now")
    for verb, text in (
        ("hint", "reveal the next hint"),
        ("reset", "restore the starter (your version is backed up)"),
        ("solution", "show our solution once yours passes (--expert: an expert's, at gold)"),
        ("show", "the statement and where your file is"),
    ):
        p = acts.add_parser(verb, help=text)
        p.add_argument("name", help="exercise id, folder name or number")
        if verb == "solution":
            p.add_argument("--force", action="store_true", help="show it before you pass")
            p.add_argument(
                "--expert",
                action="store_true",
                help="an expert's solution, what gold is measured against (once you reach gold)",
            )
    for p in acts.choices.values():
        _common(p, top=False)
    ex.set_defaults(ex_verbs=acts)  # where a verb another package owns registers (add_verb)


def add_verb(ex_parser: argparse.ArgumentParser, name: str, text: str, handler: Any) -> Any:
    """A `gpulab ex` verb another package owns (`explain`): its parser, with the options every
    verb has, run by `handler(args)`. Registered by gpulab/cli.py, so exercises/ imports none of
    the packages above it."""
    acts = ex_parser.get_default("ex_verbs")
    p = acts.add_parser(name, help=text)
    _common(p, top=False)
    p.set_defaults(ex_handler=handler)
    return p


def _common(p: argparse.ArgumentParser, *, top: bool) -> None:
    # Accepted before and after the verb: `gpulab ex --json check x` and `gpulab ex check x --json`.
    hide: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("--json", action="store_true", help="print JSON", **hide)
    p.add_argument(
        "--workdir", metavar="DIR", help="your exercise files (env GPULAB_WORKDIR)", **hide
    )
    p.add_argument("--device", type=_device, help="CUDA device index", **(hide or {"default": 0}))
    p.add_argument("--inline", action="store_true", help=argparse.SUPPRESS, **hide)
    p.add_argument("--quick", action="store_true", help=argparse.SUPPRESS, **hide)


def main(args: argparse.Namespace) -> int:
    """Run the chosen `gpulab ex` verb; a bad name, file or store becomes one line and exit 2."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.exercise_format import ExerciseFormatError
    from gpulab.exercises.loader import UnknownExercise
    from gpulab.exercises.workspace import WorkspaceError
    from gpulab.store.connection import StoreError

    verb = getattr(args, "ex_command", None) or "list"
    # An option of `check` another package owns (explain's --sanitize): (its dest, its handler).
    option = getattr(args, "check_option", None)
    try:
        if verb == "check" and option and getattr(args, option[0], False):
            return int(option[1](args))
        if verb == "list":
            return cmd_list(args)
        if verb == "check":
            return cmd_check(args)
        if verb == "watch":
            # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
            from gpulab.ex.watch import cmd_watch

            return cmd_watch(args)
        if verb == "hint":
            return cmd_hint(args)
        if verb == "reset":
            return cmd_reset(args)
        if verb == "solution":
            return cmd_solution(args)
        if verb == "show":
            return cmd_show(args)
        if verb == "worker":
            return cmd_worker(args)
        if verb == "ladder":
            return cmd_ladder(args)
        handler = getattr(args, "ex_handler", None)
        if handler is not None:  # a verb another package owns (add_verb)
            return int(handler(args))
    except (BadInput, UnknownExercise, ExerciseFormatError, WorkspaceError, StoreError) as exc:
        sys.stderr.write(f"gpulab: {exc}\n")
        return EXIT_BAD_INPUT
    sys.stderr.write(f"gpulab: unknown exercises command {verb!r}\n")
    return EXIT_BAD_INPUT


# --- verbs ----------------------------------------------------------------------------------------


def list_rows(args: argparse.Namespace) -> tuple[list[dict[str, Any]], Any, Any]:
    """A row per exercise (state, best grade, whether it runs here), the workspace and the machine."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.progress import Progress

    cat, ws, inv = catalog(), workspace(args), machine()
    with store() as st:
        progress = Progress(st).all()
    rows = []
    for ex in cat:
        why = ex.unavailable(inv)
        if not why:
            ws.ensure(ex)  # a fresh learner finds every runnable exercise's file ready to edit
        p = progress.get(ex.id)
        rows.append(
            {
                **ex.describe(),
                "path": str(ws.path(ex)),
                "file_exists": ws.exists(ex),
                "state": p.state if p else "not started",
                "passed_ever": bool(p and p.passed_ever),
                "best_grade": p.best_grade if p else None,
                "best_fraction": p.best_fraction if p else None,
                "hints_revealed": p.hints_revealed if p else 0,
                "attempts": p.attempts if p else 0,
                "available": not why,
                "unavailable": why,
                "emulated": not why and ex.emulated(inv),
                "emulator_passed": bool(p and p.emulator_passed),
            }
        )
    return rows, ws, inv


def cmd_list(args: argparse.Namespace) -> int:
    """`gpulab ex list`: the track with each exercise's state."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.report import NO_CUPY, list_lines

    rows, ws, inv = list_rows(args)
    if args.json:
        emit_json({"workspace": str(ws.root), "device": inv.label(), "exercises": rows})
        return 0
    no_cupy = f"CuPy cannot run here ({inv.reason('cupy')})" if inv.has_gpu else NO_CUPY
    print("\n".join(list_lines(rows, str(ws.root), inv.label(), no_cupy)))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """`gpulab ex check NAME`: grade the learner's file in a worker and record the attempt.

    The worker is the learner's warm one when there is one (started, and said so, when there is
    none; gpulab.runner.warm), so a repeat check costs the check, not a worker's start; with
    GPULAB_WARM_WORKER=0 each check starts and stops its own."""
    # deferred: keeps `gpulab`'s start-up light: asyncio and the store load when a verb runs
    import asyncio

    from gpulab.ex.session import Checker, record
    from gpulab.exercises.loader import find
    from gpulab.exercises.outcome import new_seed
    from gpulab.runner.warm.remote import warm_client

    ex = find(args.name)  # its own folder only: a check from the shell pays for no other
    guess = _guess(args)
    client = None if args.inline else warm_client(args.device, say=_say)
    seed = args.seed if args.seed is not None else new_seed()
    pending: list[Any] = []  # the prediction, kept once the check is sure to run

    async def check(client: Any) -> Any:
        if client is None:
            runnable(args, ex.id)  # what this machine runs, asked here (torch, on a GPU box)
        else:
            # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
            from gpulab.core.devices import Inventory

            hello = await client.hello(args.device)  # the warm worker knows what runs here
            why = ex.unavailable(Inventory.from_dict(hello["inventory"]))
            if why:
                raise BadInput(f"{ex.id} {why}")
        path = _file(args, ex).resolve()
        if guess is not None and not pending:  # kept once it will run: made before it is seen
            # deferred: keeps `gpulab`'s start-up light: the store loads when a verb runs
            from gpulab.history.predictions import EXERCISE, keep

            pending.append(keep(EXERCISE, ex.id, guess, _say))
        async with Checker(
            device=args.device,
            standby=False,
            quick=args.quick,
            inline=args.inline,
            on_event=None if args.json else _progress_line,
            client=client,
        ) as checker:
            return await checker.check(ex, path, seed)

    async def go() -> Any:
        if client is not None:
            try:
                return await check(client)
            except (ConnectionError, FileNotFoundError) as exc:  # it stopped since we found it
                _say(f"the warm worker did not answer ({exc}); this check starts its own")
        return await check(None)

    result, _ = asyncio.run(go())
    with store() as st:
        progress = record(st, result)
    workspace(args).mark_seen(ex)
    return show_result(args, ex, result, progress, _settle(pending[0] if pending else None, result))


def _guess(args: argparse.Namespace) -> Any:
    """The --predict of `check`, read (None: no prediction); BadInput names the flag."""
    text = getattr(args, "predict", None)
    if text is None:
        return None
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.history.predictions import CHECK_CONTENDERS, parse

    guess = parse(text, CHECK_CONTENDERS, flag="--predict")
    if guess is None:
        raise BadInput("--predict needs a value: a time (2ms), a percent (40%), you or library")
    return guess


def _settle(pending: Any, result: Any) -> Any:
    """The prediction completed by the check's timing, and the calibration (None: none made)."""
    if pending is None:
        return None
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.history.predictions import check_figure, settle

    value, note = check_figure(pending.quantity, result.timing)
    if not result.passed and value is None:
        note = f"the check failed: {result.message}"
    return settle(pending, value, result.device, note, _say)


def _say(line: str) -> None:
    sys.stderr.write(f"gpulab: {line}\n")


def cmd_worker(args: argparse.Namespace) -> int:
    """`gpulab ex worker [--stop]`: the learner's warm worker, if one runs (or stop it)."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.runner.warm.place import place
    from gpulab.runner.warm.remote import ask

    where = place()
    answer = ask(where, "stop" if args.stop else "status")
    if args.json:
        emit_json({"socket": str(where.socket), "running": answer is not None, **(answer or {})})
        return 0
    if answer is None:
        print(f"no warm worker ({where.socket}); the next `gpulab ex check` starts one")
    elif args.stop:
        print("the warm worker is stopping")
    else:
        st = answer["status"]
        workers = ", ".join(
            f"GPU {d}: pid {w['pid']}{' (busy)' if w['busy'] else ''}"
            for d, w in st["workers"].items()
        )
        print(f"warm worker: server pid {st['pid']}, {st['jobs']} jobs; {workers or 'no worker'}")
        left = max(0.0, st["stops_after_idle_s"] - st["idle_for_s"])
        print(f"idle {st['idle_for_s']:.0f} s; stops after {left:.0f} s more without work")
    return 0


def show_result(
    args: argparse.Namespace, ex: Any, result: Any, progress: Any, predicted: Any = None
) -> int:
    """Print a check's verdict (or its JSON), and the prediction beside it when one was made
    (`predicted`: the completed prediction and the calibration); the exit code says whether it
    passed."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.report import verdict_lines

    if args.json:
        doc = {
            "exercise": ex.id,
            "file": result.path,
            "check": result.to_dict(),
            "progress": progress.to_dict(),
            "replay": f"gpulab ex check {ex.id} --seed {result.seed}",
        }
        if predicted is not None:
            # deferred: keeps `gpulab`'s start-up light: the store loads when a verb runs
            from gpulab.history.predictions import report

            doc.update(report(*predicted))
        emit_json(doc)
    else:
        print("\n".join(verdict_lines(result, name=ex.id)))
        if predicted is not None:
            # deferred: keeps `gpulab`'s start-up light: the store loads when a verb runs
            from gpulab.history.predictions import report_lines

            print("\n".join(report_lines(*predicted)))
    return 0 if result.passed else EXIT_FAILED


def _progress_line(event: dict[str, Any]) -> None:
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.core import events as ev

    if event.get("type") == ev.PROGRESS and event.get("message"):
        sys.stderr.write(f"  {event['message']}\n")
    elif event.get("type") == ev.LOG and event.get("stream") in ("stdout", "stderr"):
        sys.stderr.write(f"  | {event['line']}\n")  # the learner's own prints


def cmd_hint(args: argparse.Namespace) -> int:
    """`gpulab ex hint NAME`: reveal the next hint and record it."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.progress import Progress

    ex = catalog().get(args.name)
    with store() as st:
        before = Progress(st).get(ex.id).hints_revealed
        shown = Progress(st).reveal_hint(ex.id, len(ex.hints))
    hints = list(ex.hints[:shown])
    if args.json:
        emit_json(
            {
                "exercise": ex.id,
                "revealed": shown,
                "total": len(ex.hints),
                "new": shown > before,
                "hints": hints,
            }
        )
        return 0
    for i, text in enumerate(hints, 1):
        print(f"Hint {i} of {len(ex.hints)}: {text}")
    if shown == before:
        print("That was the last hint. `gpulab ex solution` shows ours once yours passes.")
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    """`gpulab ex reset NAME`: put the starter back, keeping the learner's file as a backup."""
    ex = catalog().get(args.name)
    path, backup = workspace(args).reset(ex)
    if args.json:
        emit_json({"exercise": ex.id, "file": str(path), "backup": str(backup) if backup else None})
        return 0
    print(f"{path}: the starter is back.")
    print(f"Your version is kept in {backup}" if backup else "(it was still the starter)")
    return 0


def cmd_solution(args: argparse.Namespace) -> int:
    """`gpulab ex solution NAME`: print the reference solution once the exercise has passed."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.exercises.progress import Progress

    ex = catalog().get(args.name)
    with store() as st:
        progress = Progress(st).get(ex.id)
    solved = progress.passed_ever
    expert = bool(getattr(args, "expert", False))
    if expert:
        return _show_expert(args, ex, progress.best_grade)
    if not solved and not args.force:
        raise BadInput(
            f"{ex.id} has not passed yet: `gpulab ex check {ex.id}` first, or --force to look now"
        )
    text = ex.solution_path.read_text(encoding="utf-8")
    if args.json:
        emit_json(
            {"exercise": ex.id, "solved": solved, "path": str(ex.solution_path), "text": text}
        )
    else:
        print(text, end="" if text.endswith("\n") else "\n")
        if ex.has_expert and progress.best_grade == "gold":
            print(f"\nAn expert's solution: gpulab ex solution {ex.id} --expert")
    return 0


def cmd_ladder(args: argparse.Namespace) -> int:
    """`gpulab ex ladder NAME`: the exercise's ladder, its rungs' figures on this GPU when they
    were measured, and the rung nearest your latest graded figure (or --figure)."""
    # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
    from gpulab.core import peaks as pk
    from gpulab.exercises import ladder
    from gpulab.exercises.progress import Progress

    ex = catalog().get(args.name)
    rungs = ladder.rungs(ex)
    if not rungs:
        raise BadInput(f"{ex.id} has no ladder ({', '.join(ladder.having(catalog()))} have one)")
    key = _device_key()
    if args.measure:
        _measure_ladder(args, ex, key)
    value = args.figure
    if value is None:
        with store() as st:
            fraction = next(
                (a.fraction for a in Progress(st).attempts(ex.id, limit=20) if a.fraction), None
            )
        ceiling = pk.peak_for(pk.latest_gpu(None), ex.ceiling) if fraction else None
        value = fraction * float(ceiling) if fraction and ceiling else None
    if args.json:
        measured = ladder.figures(ex, key)
        placed = ladder.place(rungs, measured, value=value)
        emit_json(
            {
                "ladder": {
                    "exercise": ex.id,
                    "metric": ex.metric,
                    "rungs": [
                        {
                            "number": r.number,
                            "name": r.name,
                            "idea": r.idea,
                            "refused": r.refused,
                            "figure": measured.get(r.name),
                        }
                        for r in rungs
                    ],
                    "figure": value,
                    "rung": placed.rung.number if placed else None,
                    "band": [r.number for r in placed.band] if placed else [],
                    # a band at the memory roof, or rungs tied within ladder.TIE of each other
                    "band_kind": ("roof" if placed.roofed else "tied")
                    if placed and placed.band
                    else None,
                    "roof": ladder.roof(measured),
                    "hint": ladder.hint(rungs, placed),
                }
            }
        )
        return 0
    print("\n".join(ladder.lines(ex, key, value=value)))
    return 0


def _measure_ladder(args: argparse.Namespace, ex: Any, key: str) -> None:
    """Time the rungs on this GPU (in this process) and keep their figures under `key`."""
    from gpulab.exercises import ladder  # deferred: the CLI's start-up stays light
    from gpulab.exercises.ladder_measure import measure  # deferred: as above

    inv = machine()
    if not any(d.kind == "cuda" for d in inv.devices) or not inv.available("cupy"):
        raise BadInput("measuring a ladder needs a GPU with CuPy: this machine has neither")

    def say(line: str) -> None:
        if not args.json:
            sys.stderr.write(f"gpulab: {line}\n")

    m = measure(ex, device=getattr(args, "device", 0) or 0, say=say)
    ladder.observe(ex, key, m.rungs, metric=m.metric)
    if not args.json:
        order = [r.name for r in ladder.rungs(ex)]
        top = m.rungs[order[-1]]["value"]
        lib = f"; the top rung is {top / m.library:.2f} of {m.library_name}" if m.library else ""
        what = "each rung faster than the one below" if m.ordered(order) else "NOT in order"
        if m.roof is not None and m.ordered(order):
            what += f" or both at the memory roof ({m.roof:.4g} GB/s, a copy of the same bytes)"
        print(f"measured {len(order)} rungs in {m.rounds} rounds: {what}{lib}")


def _device_key() -> str:
    """This machine's yardstick record key (GPU 0, or the CPU without one)."""
    from gpulab.exercises import yardstick as ys  # deferred: the CLI's start-up stays light

    inv = machine()
    gpu = any(d.kind == "cuda" for d in inv.devices)
    return ys.key_for(inv, 0, cpu=not gpu)


def _show_expert(args: argparse.Namespace, ex: Any, best: str | None) -> int:
    if not ex.has_expert:
        raise BadInput(f"{ex.id} has no expert solution (the kernel exercises have one)")
    if best != "gold" and not args.force:
        raise BadInput(
            f"{ex.id}: the expert solution opens at gold (yours: {best or 'not passed'}); "
            "--force to look now"
        )
    from gpulab.exercises import yardstick  # deferred: the CLI's start-up stays light

    text = ex.expert_path.read_text(encoding="utf-8")
    if args.json:
        emit_json(
            {
                "exercise": ex.id,
                "best_grade": best,
                "yardstick": yardstick.last(ex.id, _device_key()),
                "path": str(ex.expert_path),
                "text": text,
            }
        )
        return 0
    print(f"# {ex.id}: {yardstick.words(ex, _device_key())}")
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """`gpulab ex show NAME`: the statement, the learner's file and why it cannot run here, if so."""
    ex = catalog().get(args.name)
    ws = workspace(args)
    inv = machine()
    why = ex.unavailable(inv)
    if not why:
        ws.ensure(ex)
    emulated = not why and ex.emulated(inv)
    if args.json:
        emit_json(
            {
                **ex.describe(),
                "statement": ex.statement,
                "path": str(ws.path(ex)),
                "unavailable": why,
                "emulated": emulated,
            }
        )
        return 0
    print(f"{ex.order}. {ex.title}  ({ex.id}, lesson: {ex.lesson})\n")
    print(ex.statement)
    print(f"\nYour file: {ws.path(ex)}" if not why else f"\nThis machine cannot run it: {why}")
    if emulated:
        # deferred: keeps `gpulab`'s start-up light: numpy, asyncio and the store load when a verb runs
        from gpulab.exercises.outcome import EMULATED

        print(f"Here it runs on the CUDA emulator: {EMULATED}.")
    return 0
