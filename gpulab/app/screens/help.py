"""Every key the lab answers to, generated from the live bindings so it cannot go stale."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

INTRO = """\
# gpulab help

gpulab runs experiments on this machine's GPU (or its CPU, in CPU mode) and explains what
they show. Pick an experiment in the **Experiments** pane, set its parameters (each is checked
as you type; the note beside it says what is allowed), press **r** to run and **escape** to
cancel. Results, the race between contenders, the explanation, the log and earlier runs are
the tabs under the progress bar.
"""

PANE_KEYS = [
    ("up / down", "previous / next field in the experiment panel"),
    ("enter", "in a parameter field: run the experiment"),
    ("enter / space", "open a list (experiment, choice) or press a button"),
    (
        "left / right",
        "switch tabs (Race, Results, Explain, Log, History) when the tab bar has focus",
    ),
    ("enter", "reopen a run from History"),
    ("mouse", "click any field, button, tab or pane"),
]

OUTRO = """\
## Over SSH

Colours: gpulab uses what the terminal announces. For truecolor over SSH set
`COLORTERM=truecolor` (or `TEXTUAL_COLOR_SYSTEM=truecolor`); `NO_COLOR=1` turns colour off.
If the connection drops, gpulab exits and its worker process ends with it.
"""


def key_table(bindings: list[tuple[str, Binding]]) -> str:
    lines = ["| key | what it does |", "|---|---|"]
    seen: set[tuple[str, str]] = set()
    for key_display, binding in bindings:
        what = binding.description or binding.action
        if (key_display, what) in seen:
            continue
        seen.add((key_display, what))
        lines.append(f"| `{key_display}` | {what} |")
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,f1,q", "dismiss", "Close help", id="close-help"),
    ]

    def __init__(self, bindings: list[tuple[str, Binding]]) -> None:
        super().__init__()
        self.bindings = bindings

    def compose(self) -> ComposeResult:
        pane = "\n".join(f"| `{k}` | {w} |" for k, w in PANE_KEYS)
        text = (
            INTRO
            + "\n## Keys\n\n"
            + key_table(self.bindings)
            + "\n\n## Inside a pane\n\n| key | what it does |\n|---|---|\n"
            + pane
            + "\n\n## Close this help\n\n`escape`, `f1` or `q`.\n\n"
            + OUTRO
        )
        with VerticalScroll(id="help-box"):
            yield Markdown(text, id="help-text")
