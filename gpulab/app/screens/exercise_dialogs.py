"""The exercise view's two windows: confirm a reset, and read the reference (and expert) solution."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea


class ConfirmReset(ModalScreen[bool]):
    """Reset an exercise's file to the starter? The learner's version goes to .backups/."""

    BINDINGS = [
        Binding("y", "answer(True)", "Reset", id="reset.yes"),
        Binding("n,escape", "answer(False)", "Keep my code", id="reset.no"),
    ]

    def __init__(self, title: str, backups: str) -> None:
        super().__init__()
        self.title_text = title
        self.backups = backups

    def compose(self) -> ComposeResult:
        """The question, where the learner's version will be kept, and No / Yes."""
        with Vertical(id="dialog"):
            yield Static(
                f"Reset [b]{self.title_text}[/b] to the starter?\n\nYour current version is "
                f"kept in {self.backups}, so nothing is lost.",
                id="dialog-text",
            )
            with Horizontal(id="dialog-buttons"):
                yield Button("Keep my code (n)", id="no", compact=True)
                yield Button("Reset (y)", id="yes", variant="warning", compact=True)

    def on_mount(self) -> None:
        """Focus No, so a stray Enter keeps the learner's code."""
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Close with the button's answer."""
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        """Close with `yes` (the y / n / escape keys)."""
        self.dismiss(yes)


class SolutionScreen(ModalScreen[None]):
    """The reference solution, read-only (shown once the exercise has passed); where the exercise
    has an expert solution, `e` switches to it once the learner's best grade is gold (until then
    the header says what opens it)."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="solution.close"),
        Binding("e", "toggle_expert", "Expert / reference", id="solution.expert"),
    ]

    def __init__(
        self,
        title: str,
        code: str,
        language: str | None,
        *,
        expert: str | None = None,
        expert_note: str = "",
    ) -> None:
        """`expert`: the expert's code when the learner may read it, else None; `expert_note`:
        one line about it (its figure, or what opens it)."""
        super().__init__()
        self.title_text = title
        self.code = code
        self.language = language
        self.expert = expert
        self.expert_note = expert_note
        self.showing_expert = False

    def _header(self) -> str:
        which = "Expert solution" if self.showing_expert else "Reference solution"
        head = f"{which}: [b]{self.title_text}[/b] (escape closes"
        if self.expert is not None:
            other = "the reference" if self.showing_expert else "the expert's"
            head += f"; e shows {other}"
        head += ")"
        return f"{head}\n{self.expert_note}" if self.expert_note else head

    def compose(self) -> ComposeResult:
        """A title line and the solution in a read-only code editor."""
        with Vertical(id="dialog"):
            yield Static(self._header(), id="solution-head")
            yield TextArea.code_editor(
                self.code, language=self.language, read_only=True, id="solution-code"
            )

    def action_toggle_expert(self) -> None:
        if self.expert is None:
            if self.expert_note:
                self.notify(self.expert_note, timeout=6)
            return
        self.showing_expert = not self.showing_expert
        area = self.query_one("#solution-code", TextArea)
        area.load_text(self.expert if self.showing_expert else self.code)
        self.query_one("#solution-head", Static).update(self._header())

    def action_close(self) -> None:
        """Close the solution."""
        self.dismiss(None)
