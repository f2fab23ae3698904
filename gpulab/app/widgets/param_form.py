"""A form generated from an experiment's ParamSet, validated as you type by `Param.parse`."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Checkbox, Input, Label, Select, Static

from gpulab.core.params import Param, ParamError, ParamSet


class PickSelect(Select[str], inherit_bindings=False):
    """A Select that opens on enter/space only, so up/down keep moving between fields."""

    BINDINGS = [Binding("enter,space", "show_overlay", "Choose", show=False)]


def as_text(param: Param, value: Any) -> str:
    """`value` as the text a person would type for `param` (lists comma-separated, whole ints
    without .0)."""
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    if isinstance(value, float) and value.is_integer() and param.kind == "int":
        return str(int(value))
    return "" if value is None else str(value)


class ParamField(Horizontal):
    """Label, editor and a note that shows the allowed values or the current error."""

    def __init__(self, param: Param, value: Any) -> None:
        super().__init__(classes="param-field", id=f"field-{param.name}")
        self.param = param
        self.initial = value
        self.error: str = ""

    def compose(self) -> ComposeResult:
        """The parameter's name, its editor (checkbox, choice or text field), and its help and
        error lines."""
        p = self.param
        yield Label(p.name, classes="param-name")
        if p.kind == "bool":
            yield Checkbox(p.help or p.name, bool(self.initial), compact=True, id=f"param-{p.name}")
        elif p.kind == "choice" and p.choices:
            yield PickSelect(
                [(c, c) for c in p.choices],
                value=str(self.initial),
                allow_blank=False,
                compact=True,
                id=f"param-{p.name}",
            )
        else:
            suggester = SuggestFromList(p.choices, case_sensitive=False) if p.choices else None
            yield Input(
                as_text(p, self.initial),
                compact=True,
                suggester=suggester,
                id=f"param-{p.name}",
                tooltip=f"{p.help} ({p.allowed()})" if p.help else p.allowed(),
            )
        yield Static(self._hint(), classes="param-note", markup=False)

    def _hint(self) -> str:
        p = self.param
        # the allowed values first: they must show before the note is cut, not after an error
        return f"{p.allowed()}: {p.help}" if p.help else p.allowed()

    def raw(self) -> Any:
        """What the editor holds now: a bool, the chosen option, or the typed text."""
        editor = self.query_one(f"#param-{self.param.name}")
        if isinstance(editor, Checkbox):
            return editor.value
        if isinstance(editor, Select):
            return editor.value
        assert isinstance(editor, Input)
        return editor.value

    def set_raw(self, value: Any) -> None:
        """Put `value` in the editor as the person would have entered it."""
        editor = self.query_one(f"#param-{self.param.name}")
        if isinstance(editor, Checkbox):
            editor.value = bool(value)
        elif isinstance(editor, Select):
            editor.value = str(value)
        elif isinstance(editor, Input):
            editor.value = as_text(self.param, value)
        self.validate()

    def validate(self) -> str:
        """The parse error of what is entered ("" when it is valid), shown under the field."""
        try:
            self.param.parse(self.raw())
            self.error = ""
        except ParamError as exc:
            self.error = str(exc)
        note = self.query_one(".param-note", Static)
        note.update(self.error or self._hint())
        note.set_class(bool(self.error), "-error")
        self.set_class(bool(self.error), "-invalid")
        return self.error


class ParamForm(Vertical):
    """Posts `ParamForm.Changed` whenever a value changes; `errors()` says what is wrong."""

    class Changed(Message):
        """Posted when any field changes; `valid` says whether every field parses."""

        def __init__(self, form: ParamForm, valid: bool) -> None:
            self.form = form
            self.valid = valid
            super().__init__()

    def __init__(self, params: ParamSet, values: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.params = params
        self.values = {**params.defaults(), **(values or {})}

    def compose(self) -> ComposeResult:
        """A field per parameter (a note when there are none)."""
        if not len(self.params):
            yield Static("This experiment takes no parameters.", classes="param-note")
        for p in self.params:
            yield ParamField(p, self.values.get(p.name, p.default))

    def fields(self) -> list[ParamField]:
        """The form's fields, in order."""
        return list(self.query(ParamField))

    def _composed(self) -> bool:
        return len(self.fields()) == len(self.params)

    def errors(self) -> list[str]:
        """ "name: why" for every field that does not parse."""
        if not self._composed():  # just built, not yet on screen: check what it was given
            out = []
            for p in self.params:
                try:
                    p.parse(self.values[p.name])
                except ParamError as exc:
                    out.append(str(exc))
            return out
        return [e for f in self.fields() if (e := f.validate())]

    def raw(self) -> dict[str, Any]:
        """The entered values by parameter name, unparsed."""
        if not self._composed():
            return {p.name: as_text(p, self.values[p.name]) for p in self.params}
        return {f.param.name: f.raw() for f in self.fields()}

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the named fields with `values` (names the form does not have are ignored)."""
        self.values.update({k: v for k, v in values.items() if k in self.values})
        for f in self.fields():
            if f.param.name in values:
                f.set_raw(values[f.param.name])

    def _changed(self, widget: Any) -> None:
        for f in self.fields():
            if widget in f.walk_children():
                f.validate()
        self.post_message(self.Changed(self, not any(f.error for f in self.fields())))

    def on_input_changed(self, event: Input.Changed) -> None:
        """A text field changed: validate and tell the panel."""
        event.stop()
        self._changed(event.input)

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        """A checkbox changed: validate and tell the panel."""
        event.stop()
        self._changed(event.checkbox)

    def on_select_changed(self, event: Select.Changed) -> None:
        """A choice changed: validate and tell the panel."""
        event.stop()
        self._changed(event.select)
