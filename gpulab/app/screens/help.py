"""Every key the lab answers to, gathered from the live bindings so it cannot go stale.

`help_sections(app)` walks the main screen as it is (every pane's widgets, the GPU list, the
parameter fields of the open experiment, the widgets a form can hold) and the windows that open
on top (quiz, traceback, this help), and reads each one's bindings. A key bound by the app with
priority (ctrl+c, ctrl+q, ctrl+p) wins over a widget's binding of the same key on the main
screen, so the widget's is not listed there.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown

from gpulab.app.pane_table import PaneSpec
from gpulab.app.screens.modal import OnceModal

INTRO = """\
# gpulab help

gpulab runs experiments on this machine's GPU (or its CPU, in CPU mode) and explains what
they show. Pick an experiment in the **Experiments** pane, set its parameters (each is checked
as you type; the note beside it says what is allowed), press **r** to run and **escape** to
cancel. Results, the race between contenders, the explanation, the log and earlier runs are
the tabs under the progress bar. Before a run or a check (f3 in an exercise) you may type what
you expect in **predict**: the result shows it beside the measurement, and
`gpulab predictions` follows how close your guesses get.
"""

TIPS = [
    ("enter", "in a parameter field: run the experiment"),
    ("enter / space", "open a list (experiment, choice) or press a button"),
    (
        "left / right",
        "switch tabs (Race, Results, Explain, Log, History) when the tab bar has focus",
    ),
    ("enter", "in the GPU list: run experiments on that GPU; in History: reopen a run"),
    ("mouse", "click any field, button, tab or pane"),
]

OUTRO = """\
## Over SSH

Colours: gpulab uses what the terminal announces. For truecolor over SSH set
`COLORTERM=truecolor` (or `TEXTUAL_COLOR_SYSTEM=truecolor`); `NO_COLOR=1` turns colour off.
If the connection drops, gpulab exits and its worker process ends with it.
"""

# Where a widget is, in words: by id first, then by class.
PLACES_BY_ID = {
    "gpu-list": "GPU list",
    "gpu-scroll": "GPU figures",
    "experiment-select": "experiment chooser",
    "results": "results table",
    "job-log": "log",
    "history": "history",
    "lesson-tree": "lesson list",
    "lesson-filter": "lesson filter",
    "lesson-scroll": "lesson text",
    "ex-table": "exercise list",
    "ex-side": "verdict and statement",
}
PLACES_BY_CLASS = {
    "Button": "buttons",
    "Checkbox": "checkbox fields",
    "Input": "parameter fields",
    "PickSelect": "choice fields",
    "SelectOverlay": "an open choice list",
    "ContentTabs": "tab bar",
    "Tabs": "tab bar",
}
# Widgets a pane can hold that the open experiment may not show now (its form decides).
MAY_APPEAR = {"experiments": [("textual.widgets", "Checkbox")]}
# The windows that open on top of the main screen: (title, module, class).
WINDOWS = [
    ("Quiz", "gpulab.app.screens.quiz", "QuizScreen"),
    ("Traceback", "gpulab.app.screens.traceback", "TracebackScreen"),
    ("This help", "gpulab.app.screens.help", "HelpScreen"),
    ("Reset an exercise", "gpulab.app.screens.exercise_dialogs", "ConfirmReset"),
    ("Solution", "gpulab.app.screens.exercise_dialogs", "SolutionScreen"),
    ("Command palette", "gpulab.app.screens.modal", "Palette"),
]


# Widgets whose (many, standard) keys are listed once, in a section of their own.
SHARED = {"Input": "In a text field", "ExerciseEditor": "In the code editor"}


@dataclass
class KeyRow:
    """Keys of one place (a pane, a widget), or a pointer to a shared section's keys."""

    where: str
    keys: list[tuple[str, str]] = field(default_factory=list)  # (key as shown, what it does)
    see: str = ""  # the keys are those of a shared section


@dataclass
class KeySection:
    """A titled group of key rows in the help."""

    title: str
    rows: list[KeyRow] = field(default_factory=list)


def _describe(binding: Binding) -> str:
    return binding.description or binding.action.replace("_", " ")


def _display(app: Any, key: str) -> str:
    return app.get_key_display(Binding(key, ""))


def _split(bindings_map: Any) -> list[Binding]:
    out: list[Binding] = []
    for key, bindings in bindings_map.key_to_bindings.items():
        for b in bindings:
            out.append(Binding(key, b.action, b.description, show=b.show, priority=b.priority))
    return out


def bindings_of(node: Any) -> list[Binding]:
    """Every binding a live node answers to (its own and inherited), one per key."""
    return _split(node._bindings)


def _class_bindings(cls: Any) -> list[Binding]:
    """The bindings an instance of `cls` would have."""
    return _split(cls._merge_bindings())


def _reachable(node: Widget) -> bool:
    """A key reaches a node's bindings only when it or something inside it can have focus."""
    if node.can_focus:
        return True
    return any(w.can_focus for w in node.walk_children(Widget))


def _place(node: Widget, pane_ids: Sequence[str]) -> str:
    if node.id in PLACES_BY_ID:
        return PLACES_BY_ID[node.id]
    name = type(node).__name__
    if name in PLACES_BY_CLASS:
        return PLACES_BY_CLASS[name]
    if node.has_class("pane") or node.id in pane_ids:
        return "anywhere in the pane"
    return (node.id or name).replace("-", " ")


def _add(rows: dict[str, KeyRow], where: str, keys: list[tuple[str, str]]) -> None:
    row = rows.setdefault(where, KeyRow(where))
    for k in keys:
        if k not in row.keys:
            row.keys.append(k)


def help_sections(app: Any, panes: Sequence[PaneSpec]) -> list[KeySection]:
    """The keys of the app, of each of the main screen's `panes` (its pane table) and of the
    windows on top, as shown."""
    main = app.screen_stack[0]
    shadowed = {b.key for b in bindings_of(app) if b.priority}
    declared = [
        key.strip()
        for b in [*type(app).BINDINGS, *type(main).BINDINGS]
        if isinstance(b, Binding)
        for key in b.key.split(",")
    ]
    found = [b for b in bindings_of(app)]
    found += [b for b in bindings_of(main) if b.key not in shadowed]
    found.sort(key=lambda b: declared.index(b.key) if b.key in declared else len(declared))
    everywhere: list[tuple[str, str]] = []
    for b in found:
        row = (_display(app, b.key), _describe(b))
        if row not in everywhere:
            everywhere.append(row)
    sections = [KeySection("Everywhere", [KeyRow("", everywhere)])]
    shared: dict[str, KeySection] = {}
    pane_ids = [p.id for p in panes]
    for spec in panes:
        pane_id = spec.id
        if not main.query(f"#shell-{pane_id}"):
            continue
        shell = main.query_one(f"#shell-{pane_id}")
        rows: dict[str, KeyRow] = {}
        for node in shell.walk_children(Widget):
            if not _reachable(node):
                continue
            keys = [
                (_display(app, b.key), _describe(b))
                for b in bindings_of(node)
                if b.key not in shadowed
            ]
            if not keys:
                continue
            title = SHARED.get(type(node).__name__)
            if title is None:
                _add(rows, _place(node, pane_ids), keys)
                continue
            where = _place(node, pane_ids)
            rows.setdefault(where, KeyRow(where, see=title))
            section = shared.setdefault(title, KeySection(title, [KeyRow("")]))
            _add({"": section.rows[0]}, "", keys)
        for module, name in MAY_APPEAR.get(pane_id, []):
            cls = getattr(importlib.import_module(module), name)
            keys = [(_display(app, b.key), _describe(b)) for b in _class_bindings(cls)]
            _add(rows, PLACES_BY_CLASS.get(name, name), keys)
        if rows:
            sections.append(KeySection(spec.help_section, list(rows.values())))
    sections += shared.values()
    for title, module, name in WINDOWS:
        cls = getattr(importlib.import_module(module), name)
        keys = [
            (_display(app, b.key), _describe(b))
            for b in _class_bindings(cls)
            if b.key not in shadowed  # the app's priority keys win on top windows too
        ]
        sections.append(KeySection(f"Window: {title}", [KeyRow("", keys)]))
    return sections


def _cell(keys: list[tuple[str, str]]) -> str:
    return " · ".join(f"`{k}` {what}" for k, what in keys)


def key_markdown(sections: list[KeySection]) -> str:
    """The sections as Markdown tables of key and what it does."""
    out: list[str] = []
    for section in sections:
        out.append(f"### {section.title}\n")
        if len(section.rows) == 1 and not section.rows[0].where:
            out += ["| key | what it does |", "|---|---|"]
            out += [f"| `{k}` | {what} |" for k, what in section.rows[0].keys]
        else:
            out += ["| where | keys |", "|---|---|"]
            out += [
                f"| {row.where} | {_cell(row.keys) if not row.see else f'see *{row.see}*'} |"
                for row in section.rows
            ]
        out.append("")
    return "\n".join(out)


class HelpScreen(OnceModal[None]):
    """The help: what the lab is, every key by where it works, and tips."""

    BINDINGS = [
        Binding("escape,f1,q", "dismiss", "Close help", id="close-help"),
    ]

    def __init__(self, sections: list[KeySection]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        """The intro, the key tables and the tips as one scrollable Markdown page."""
        tips = "\n".join(f"| `{k}` | {w} |" for k, w in TIPS)
        text = (
            INTRO
            + "\n## Keys\n\n"
            + key_markdown(self.sections)
            + "\n## Tips\n\n| key | what it does |\n|---|---|\n"
            + tips
            + "\n\n## Close this help\n\n`escape`, `f1` or `q`.\n\n"
            + OUTRO
        )
        with VerticalScroll(id="help-box"):
            yield Markdown(text, id="help-text")
