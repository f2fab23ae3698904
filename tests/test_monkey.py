"""A seeded monkey: the real app, its real worker in CPU mode, 80x24, random keys in every pane.

The keys come in bursts; before each burst the keyboard is put in the next pane in turn (GPU
info, lessons, experiments, memory gauge), so every pane gets its share whatever the dice say.
Quit keys (q, ctrl+q, ctrl+c) are never pressed; a quit that comes another way (the command
palette's "Quit" entry, found by random typing) is counted and ignored, so that one lucky
sequence does not end the test early. Any exception ends the test: one raised by the app (Pilot
re-raises it), one caught by our own workers (`Internal error in ...` notices), or an app that
is no longer running.

Most bursts (RAPID) are typed fast, as keys arrive over a slow link; the others key
by key, the app settled after each.

By default one seed, 300 keys (about 50 s of one core on a loaded 2-core box: CI's 15 minutes
are tight).
`GPULAB_MONKEY=full` runs seeds 0, 1 and 2 (1,000 keys each) and a 5,000-key run on seed 3;
`GPULAB_MONKEY_SEEDS=0,1,2` and `GPULAB_MONKEY_KEYS=5000` choose freely (README, "Test"). A failure names the seed, the key
count and the burst of keys that led to it.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

import pytest
from textual import events

from gpulab.app.app import GpuLabApp
from gpulab.app.main_screen import MainScreen

PANES = ("gpu-info", "lessons", "experiments", "memory-gauge")
BURST = 40
MORE = 4  # how far past its keys a run goes for a second lesson (see test_monkey)
RAPID = 0.8  # the share of bursts typed fast (see type_fast); the others go key by key, settled
QUIT_KEYS = {"q", "ctrl+q", "ctrl+c"}

# Navigation and the panes' own keys often; every letter now and then. No quit key.
KEYS: list[tuple[str, int]] = [
    ("tab", 6),
    ("shift+tab", 3),
    ("enter", 8),
    ("escape", 5),
    ("up", 6),
    ("down", 8),
    ("left", 3),
    ("right", 3),
    ("pageup", 1),
    ("pagedown", 1),
    ("home", 1),
    ("end", 1),
    ("space", 2),
    ("backspace", 2),
    ("slash", 3),
    ("question_mark", 1),
    ("n", 4),
    ("p", 3),
    ("t", 2),
    ("l", 2),
    ("m", 2),
    ("e", 2),
    ("r", 1),
    ("f1", 1),
    ("ctrl+p", 1),
    *((c, 1) for c in "abcdfghijkosuvwxyz0123456789"),
    ("full_stop", 1),
    ("comma", 1),
    ("minus", 1),
]
assert not QUIT_KEYS & {k for k, _ in KEYS}


def _runs() -> list[tuple[int, int]]:
    """(seed, keys) pairs: one seed of 300 keys by default; GPULAB_MONKEY=full adds seeds 1
    and 2 and a 5,000-key run; GPULAB_MONKEY_SEEDS / GPULAB_MONKEY_KEYS choose freely."""
    keys = int(os.environ.get("GPULAB_MONKEY_KEYS", "300"))
    seeds = [int(s) for s in os.environ.get("GPULAB_MONKEY_SEEDS", "0").split(",") if s.strip()]
    runs = [(seed, keys) for seed in seeds]
    if os.environ.get("GPULAB_MONKEY") == "full":
        runs = [(0, 1000), (1, 1000), (2, 1000), (3, 5000)]
    return runs


class MonkeyApp(GpuLabApp):
    """The real app; only a quit is turned into a count (see the module's docstring)."""

    quits = 0

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.lessons_opened: list[str] = []

    async def action_quit(self) -> None:
        self.quits += 1

    def on_lesson_opened(self, message: Any) -> None:
        self.lessons_opened.append(message.lesson_id)


def type_fast(app: GpuLabApp, key: str) -> None:
    """A key as the terminal driver delivers it, without waiting for the app to settle (as
    Pilot.press does after every key): a fast typist, keys queueing behind slow handlers."""
    char = {"space": " ", "slash": "/", "question_mark": "?", "full_stop": ".", "comma": ","}
    char |= {"minus": "-", "enter": "\r", "tab": "\t", "escape": "\x1b", "backspace": "\x7f"}
    key_event = events.Key(key, char.get(key, key if len(key) == 1 else None))
    key_event.set_sender(app)
    app._driver.send_message(key_event)


def _internal_errors(app: GpuLabApp) -> list[str]:
    return [
        f"{n.title}: {n.message}"
        for n in app._notifications
        if str(n.title).startswith("Internal error")
    ]


def _check(app: GpuLabApp, where: str) -> None:
    assert app._exception is None, f"{where}: {app._exception!r}"
    assert app.is_running and app.return_code is None, f"{where}: the app stopped"
    errors = _internal_errors(app)
    assert not errors, f"{where}: {errors}"


@pytest.mark.parametrize(("seed", "total"), _runs())
async def test_monkey(seed, total, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the worker in CPU mode on any machine
    rng = random.Random(seed)
    names = [k for k, _ in KEYS]
    weights = [w for _, w in KEYS]
    app = MonkeyApp()
    pressed: list[str] = []
    started = time.monotonic()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(2400):  # the real worker: a cold torch import on a busy box is slow
            if app.handshake is not None and app.main_ready and app.main_ready.is_set():
                break
            await pilot.pause(0.05)
        assert app.handshake is not None, "the worker never reported ready"
        burst = 0
        # The keys go on past `total`, up to MORE times it, until a second lesson has opened:
        # whether one opens within the first 300 depends on how fast the lesson loads beside the
        # keys (at 500 the coverage line failed now and then on a loaded 2-core box); the keys,
        # drawn from the seed, are the same either way, only how many are typed changes
        while len(pressed) < total or (
            len(set(app.lessons_opened)) < 2 and len(pressed) < MORE * total
        ):
            pane = PANES[burst % len(PANES)]
            burst += 1
            while not isinstance(app.screen, MainScreen):  # a dialog left open: close it
                app.pop_screen()
                await pilot.pause()
            app.focus_pane(pane)
            left = total - len(pressed)
            keys = rng.choices(names, weights, k=min(BURST, left) if left > 0 else BURST)
            rapid = rng.random() < RAPID
            for key in keys:
                pressed.append(key)
                type_fast(app, key)
                if rapid:  # now and then a breath: handlers run between some keys, not all
                    await asyncio.sleep(0.01 if rng.random() < 0.2 else 0)
                else:
                    await pilot.pause()
            await pilot.pause()
            how = "typed fast" if rapid else "one at a time"
            _check(app, f"seed {seed}, after key {len(pressed)} ({pane}, {how}: {' '.join(keys)})")
        took = time.monotonic() - started
        print(
            f"monkey seed {seed}: {len(pressed)} keys in {took:.1f} s; lessons opened "
            f"{len(app.lessons_opened)}, runs {len(app.panel.runs)}, quits ignored {app.quits}"
        )
        _check(app, f"seed {seed}, at the end")
        # Keys typed fast can still be queued when the run ends; taken during the app's shutdown,
        # Textual's own binding check reads a screen stack already emptied (ScreenStackError at
        # run_test's exit, seed 0 with 520 keys, one run in two): the test's artifact, so the
        # queue is drained first
        for _ in range(1000):
            if app._message_queue.empty():
                break
            await pilot.pause()
        assert len(set(app.lessons_opened)) >= 2, "the keys never showed a second lesson"
