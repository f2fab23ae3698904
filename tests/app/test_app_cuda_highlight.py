"""CUDA C colours inside the kernel strings of the exercise editor (tree-sitter-cuda laid over
Textual's Python highlights): which strings, exactly where, the Python around unchanged, the
hook Textual calls after an edit, and the editor without the grammar."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import TextArea
from textual.widgets.text_area import TextAreaTheme

from gpulab.app.app import WIDGETS_CSS
from gpulab.app.widgets import cuda_highlight
from gpulab.app.widgets.code_editor import ExerciseEditor
from gpulab.exercises.loader import load_catalog


def editor(text: str) -> ExerciseEditor:
    return ExerciseEditor.code_editor(text, language="python")


def names_at(ed: TextArea, row: int, word: str, nth: int = 0) -> set[str]:
    """The highlight names covering exactly the characters of `word` (its nth occurrence) on
    `row`: the map is in UTF-8 byte columns, so the word is located in the line's bytes."""
    line = ed.document.get_line(row).encode("utf-8")
    at = -1
    for _ in range(nth + 1):
        at = line.index(word.encode("utf-8"), at + 1)
    end = at + len(word.encode("utf-8"))
    return {
        name
        for start, stop, name in ed._highlights.get(row, [])
        if start <= at and (stop is None or stop >= end)
    }


def plain_map(text: str) -> dict[int, list]:
    plain = TextArea.code_editor(text, language="python")
    return {row: sorted(spans) for row, spans in plain._highlights.items() if spans}


def starter(name: str) -> str:
    exercise = load_catalog().get(name)
    return Path(exercise.folder, "starter.py").read_text(encoding="utf-8")


def test_map_add_ten_kernel_gets_cuda_colours_and_the_python_around_is_unchanged():
    text = starter("map-add-ten")
    ed = editor(text)
    lines = text.splitlines()
    first = lines.index('SOURCE = r"""')
    last = lines.index('"""', first)
    head = lines[first + 1]
    assert head.startswith('extern "C" __global__ void add_ten(')
    assert names_at(ed, first + 1, "extern") == {"keyword"}
    assert names_at(ed, first + 1, "__global__") == {"keyword.function"}
    assert names_at(ed, first + 1, "void") == {"type.builtin"}
    assert names_at(ed, first + 1, "add_ten") == {"function"}
    assert names_at(ed, first + 2, "threadIdx") == {"constant.builtin"}
    assert names_at(ed, first + 3, "if") == {"conditional"}
    assert names_at(ed, first + 4, "// TODO") == {"comment"}
    # no string colour left inside the quotes, and none outside them lost
    for row in range(first + 1, last):
        assert all(name != "string" or row == first + 1 for *_, name in ed._highlights[row])
    assert names_at(ed, first, 'r"""') == {"string"}  # cut at the line's end: the same look
    assert names_at(ed, first, "SOURCE") == {"constant", "variable"}
    assert names_at(ed, last, '"""') == {"string"}
    plain = plain_map(text)
    ours = {row: sorted(spans) for row, spans in ed._highlights.items() if spans}
    outside = [row for row in plain if not first <= row <= last]
    assert outside and all(ours.get(row) == plain[row] for row in outside)


def test_columns_are_right_after_non_ascii_text_on_the_same_line_and_below():
    text = (
        # one line: the \\n is an escape inside a non-raw string
        'π = "ünïcode"; K = cp.RawKernel("__global__ void f() { __syncthreads(); }\\nëxtra", "f")\n'
        'Z = "é"  # é\n'
        "M = cp.RawModule(code=(\n"
        "    'int é;'  # a comment between the parts\n"
        "    '__device__ float g(float x) { return 2.0f * x; }'\n"
        "))\n"
    )
    ed = editor(text)
    assert names_at(ed, 0, "__global__") == {"keyword.function"}
    assert names_at(ed, 0, "__syncthreads") == {"constant.builtin"}
    assert names_at(ed, 0, "void") == {"type.builtin"}
    assert names_at(ed, 0, "ünïcode") == {"string"}  # the Python string before the kernel
    assert names_at(ed, 0, "RawKernel") >= {"method.call"}
    assert names_at(ed, 0, '"f"') == {"string"}  # after the kernel, on its line
    assert names_at(ed, 1, '"é"') == {"string"}
    assert names_at(ed, 1, "# é") == {"comment", "spell"}
    assert names_at(ed, 3, "int") == {"type.builtin"}
    assert names_at(ed, 3, "# a comment") == {"comment", "spell"}  # Python's, between parts
    assert names_at(ed, 4, "__device__") == {"keyword.function"}
    assert names_at(ed, 4, "2.0f") == {"number"}
    assert names_at(ed, 4, "return") == {"keyword.return"}


def test_raw_multiline_string_starting_mid_line_maps_rows_and_columns():
    text = 'kernels = {"k": r"""  __global__ void k(float *a) {\n  a[0] = 1;\n}"""}\n'
    ed = editor(text)
    assert names_at(ed, 0, "__global__") == {"keyword.function"}
    assert names_at(ed, 1, "1") == {"number"}
    assert names_at(ed, 1, "=") == {"operator"}
    assert names_at(ed, 2, "}") == {"punctuation.bracket"}
    assert names_at(ed, 2, '"""') == {"string"}


def test_elementwise_and_reduction_fragments_are_code_and_their_parameters_stay_strings():
    ed = editor(starter("reduction-kernel"))  # comments between the arguments
    lines = ed.text.splitlines()
    row = next(i for i, line in enumerate(lines) if '"a + b"' in line)
    assert names_at(ed, row, "+") == {"operator"}
    assert names_at(ed, row, "a") == {"variable"}
    assert names_at(ed, row, '"', 0) == {"string"}  # the quotes keep their colour
    params = next(i for i, line in enumerate(lines) if '"T x"' in line)
    assert names_at(ed, params, "T x") == {"string"}
    identity = next(i for i, line in enumerate(lines) if '"0"' in line)
    assert names_at(ed, identity, "0") == {"number"}
    name = next(i for i, line in enumerate(lines) if '"row_norm"' in line)
    assert names_at(ed, name, "row_norm") == {"string"}

    ed = editor(
        'OP = "out = max(x * 2.0f, 0.0f)"\nk = ElementwiseKernel("T x", "T out", OP, "k")\n'
    )
    assert names_at(ed, 0, "max") == {"function.call"}
    assert names_at(ed, 0, "2.0f") == {"number"}
    assert names_at(ed, 1, "T x") == {"string"}


def test_strings_that_are_not_kernels_stay_strings():
    text = (
        '"""A docstring that explains __global__ and extern "C"."""\n'
        'name = f"__global__ void {kernel}() {{}}"\n'
        'note = "int x = 1;"\n'
        'k = cp.RawKernel(SOURCE_FROM_ELSEWHERE, "int y = 2;")\n'
    )
    ed = editor(text)
    assert plain_map(text) == {row: sorted(s) for row, s in ed._highlights.items() if s}
    torch_only = starter("vector-add")
    ed = editor(torch_only)
    assert plain_map(torch_only) == {row: sorted(s) for row, s in ed._highlights.items() if s}


def test_without_the_grammar_the_editor_falls_back_to_python_colours(monkeypatch):
    text = starter("map-add-ten")
    monkeypatch.setitem(sys.modules, "tree_sitter_cuda", None)  # import fails
    cuda_highlight.cuda_grammar.cache_clear()
    try:
        ed = editor(text)
        assert ed.cuda is None
        assert {row: sorted(s) for row, s in ed._highlights.items() if s} == plain_map(text)
    finally:
        monkeypatch.undo()
        cuda_highlight.cuda_grammar.cache_clear()
    assert cuda_highlight.cuda_grammar() is not None


def test_a_failure_while_colouring_keeps_python_colours(monkeypatch):
    def broken(*_args):
        raise RuntimeError("a tree-sitter change")

    monkeypatch.setattr(cuda_highlight.CudaHighlighter, "overlay", broken)
    text = starter("map-add-ten")
    ed = editor(text)
    assert ed.cuda is None
    assert {row: sorted(s) for row, s in ed._highlights.items() if s} == plain_map(text)


class KernelApp(App[None]):
    CSS_PATH = WIDGETS_CSS  # the lab's rules for its own widgets

    def compose(self) -> ComposeResult:
        yield ExerciseEditor.code_editor(starter("map-add-ten"), language="python", id="ed")


def cell_colour(ed: TextArea, row: int, column: int) -> str | None:
    """The foreground colour Textual draws at a character of the document (ASCII lines)."""
    x = ed.gutter_width + column
    at = 0
    for segment in ed.render_line(row - ed.scroll_offset.y):
        if at <= x < at + len(segment.text):
            return segment.style.color.name if segment.style and segment.style.color else None
        at += len(segment.text)
    return None


async def test_textual_calls_the_hook_after_an_edit_and_draws_the_colours():
    """Fails if a Textual update stops calling TextArea._build_highlight_map after edits or
    stops drawing from TextArea._highlights (the private hook this colouring rides on)."""
    app = KernelApp()
    async with app.run_test(size=(100, 30)) as pilot:
        ed = app.query_one(ExerciseEditor)
        lines = ed.text.splitlines()
        row = lines.index('SOURCE = r"""') + 3  # the `if (i >= n) return;` line
        ed.insert("__syncthreads(); ", (row, 4))
        await pilot.pause()
        line = ed.document.get_line(row)
        assert line.startswith("    __syncthreads(); if")
        theme = TextAreaTheme.get_builtin_theme(ed.theme)
        assert theme is not None
        string = theme.syntax_styles["string"].color.name
        builtin = theme.syntax_styles["constant.builtin"].color.name
        conditional = theme.syntax_styles["conditional"].color.name
        assert builtin != string and conditional != string
        assert cell_colour(ed, row, line.index("__syncthreads")) == builtin
        assert cell_colour(ed, row, line.index("if")) == conditional
        assert cell_colour(ed, row - 3, 9) == string  # the r""" opening the kernel

        # Byte columns become the right cells after wider characters earlier on the line.
        ed.load_text('é, ü = 1, 2; K = cp.RawKernel(r"""__global__ void k() {}""", "k")\n')
        await pilot.pause()
        line = ed.document.get_line(0)
        function = theme.syntax_styles["keyword.function"].color.name
        assert function != string
        assert cell_colour(ed, 0, line.index("__global__")) == function
        assert cell_colour(ed, 0, line.index("__global__") - 1) == string  # the last quote
        assert cell_colour(ed, 0, line.index('"k"') + 1) == string


def test_typing_outside_a_kernel_parses_no_cuda_and_inside_it_one_string():
    ed = editor(starter("map-add-ten") + "\n" + starter("zip-add"))
    assert ed.cuda is not None
    parser = ed.cuda.parser
    parsed: list[bytes] = []

    class Counting:
        def parse(self, text: bytes) -> object:
            parsed.append(text)
            return parser.parse(text)

    ed.cuda.parser = Counting()
    lines = ed.text.splitlines()
    ed.insert("x = 1\n", (len(lines), 0))  # Python, below both kernels
    assert parsed == []
    row = lines.index('SOURCE = r"""') + 2
    ed.insert(" ", (row, 0))  # one kernel changes: that one string is parsed again
    assert len(parsed) == 1 and b"void add_ten(" in parsed[0] and b"void add(" not in parsed[0]
