"""CUDA C colours for the kernel strings inside the exercise editor's Python.

Which strings are CUDA C (the rule):
- the code arguments of a CuPy kernel call, by position or keyword: `RawKernel(code, ...)`,
  `RawModule(code=...)`, `ElementwiseKernel(..., operation, ..., preamble=, loop_prep=,
  after_loop=)`, `ReductionKernel(..., map_expr, reduce_expr, post_map_expr, identity, ...,
  preamble=)`, called as `cp.RawKernel` or `RawKernel`. The parameter lists ("float32 x") are
  CuPy's own notation, not C, and stay string-coloured;
- a string assigned to a name (`SOURCE = r\"\"\"...\"\"\"`) when that name is such an argument;
- any other string whose text holds `__global__` or `extern "C"` (a kernel kept in a dict or
  handed to a helper), docstrings excepted.
f-strings with `{...}` parts are left alone: their text is not the code CuPy compiles.

A whole source (RawKernel, RawModule, a preamble) is parsed as a translation unit; a fragment
(an ElementwiseKernel operation, a ReductionKernel expression) inside a function body, so that
`y = a * x` is a statement and not a broken declaration.

Positions are tree-sitter points, (row, UTF-8 byte column), in both trees: a span at (r, c) of
the string's text is at (row + r, column + c) of the document on the text's first line and at
(row + r, c) below it, whatever characters come before the string. The TextArea converts byte
columns to characters when it draws.

Each distinct string text is parsed once (a small cache): typing in the Python around a kernel
costs one query on the Python tree, typing inside a kernel one parse of that string.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Point = tuple[int, int]
Span = tuple[int, int, int, int, str]  # start row, start byte column, end row, end column, name
Highlight = tuple[int, int | None, str]  # as TextArea keeps them per row: start, end, name

UNIT, BODY = "unit", "body"
# Arguments that are CUDA C, per CuPy class: a position or a keyword, and how to parse it.
CODE_ARGS: dict[str, dict[int | str, str]] = {
    "RawKernel": {0: UNIT, "code": UNIT},
    "RawModule": {0: UNIT, "code": UNIT},
    "ElementwiseKernel": {
        2: BODY,
        "operation": BODY,
        "preamble": UNIT,
        "loop_prep": BODY,
        "after_loop": BODY,
    },
    "ReductionKernel": {
        **{i: BODY for i in (2, 3, 4, 5)},
        **{k: BODY for k in ("map_expr", "reduce_expr", "post_map_expr", "identity")},
        "preamble": UNIT,
    },
}
MARKERS = (b"__global__", b'extern "C"')
HINTS = (b"Kernel", b"RawModule", *MARKERS)  # a file with none of these has no kernel string
BODY_OPEN, BODY_CLOSE = b"void f(){", b"\n;}"  # no newline before the text: rows stay aligned
CACHE_SIZE = 64

PYTHON_QUERY = f"""
((call function: [(identifier) @_fn (attribute attribute: (identifier) @_fn)]) @kernel_call
 (#any-of? @_fn {" ".join(f'"{name}"' for name in CODE_ARGS)}))
(assignment left: (identifier) right: (_)) @assignment
(string) @string
"""

# Highlight names that Textual's built-in themes all style. Where two patterns cover the same
# text the later one wins. CUDA's own words (threadIdx, __syncthreads, atomicAdd, ...) share
# one colour: everything the GPU gives a kernel for free looks alike.
CUDA_QUERY = r"""
(identifier) @variable
(comment) @comment
[(string_literal) (char_literal) (raw_string_literal) (system_lib_string)] @string
(number_literal) @number
[(true) (false)] @boolean
(null) @constant.builtin

(primitive_type) @type.builtin
(sized_type_specifier) @type.builtin
(type_identifier) @type
((type_identifier) @type.builtin
 (#match? @type.builtin "^(u?(char|short|int|long|longlong)[1-4]|(float|double)[1-4]|size_t|u?int(8|16|32|64)_t|__half2?|half2?|__nv_bfloat162?)$"))

["const" "constexpr" "extern" "static" "inline" "volatile" "restrict" "struct" "union" "enum"
 "typedef" "template" "typename" "class" "namespace" "using" "sizeof" "new" "delete"] @keyword
["if" "else" "switch" "case" "default"] @conditional
["for" "while" "do" "break" "continue" "goto"] @repeat
"return" @keyword.return
["#include" "#define" "#if" "#ifdef" "#ifndef" "#else" "#elif" "#endif"
 (preproc_directive)] @include

(function_declarator declarator: (identifier) @function)
(call_expression function: (identifier) @function.call)
(call_expression function: (field_expression field: (field_identifier) @method.call))
(call_expression function: (template_function name: (identifier) @function.call))

["__global__" "__device__" "__host__" "__forceinline__" "__noinline__" "__launch_bounds__"]
 @keyword.function
["__shared__" "__constant__" "__managed__" "__restrict__" "__grid_constant__"] @keyword
((identifier) @constant.builtin
 (#any-of? @constant.builtin "threadIdx" "blockIdx" "blockDim" "gridDim" "warpSize"))
((call_expression function: (identifier) @constant.builtin)
 (#match? @constant.builtin "^(__[a-z].*|atomic[A-Z].*)$"))

["=" "+=" "-=" "*=" "/=" "%=" "&=" "|=" "^=" "<<=" ">>=" "+" "-" "*" "/" "%" "++" "--" "==" "!="
 "<" ">" "<=" ">=" "&&" "||" "!" "&" "|" "^" "~" "<<" ">>" "?" "->"] @operator
["(" ")" "[" "]" "{" "}" "<<<" ">>>"] @punctuation.bracket
["," ";" "." ":" "::"] @punctuation.delimiter
"""


@dataclass(frozen=True)
class CudaString:
    """The text inside one kernel string's quotes, and its CUDA spans (document points)."""

    start: Point
    end: Point
    spans: list[Span]


@lru_cache(maxsize=1)
def cuda_grammar() -> tuple[Any, Any, Any] | None:
    """(Parser, Query, QueryCursor class) for CUDA C, or None when tree-sitter-cuda is missing
    or does not load with this tree-sitter: the editor then shows kernels string-coloured."""
    try:
        import tree_sitter_cuda
        from tree_sitter import Language, Parser, Query, QueryCursor

        language = Language(tree_sitter_cuda.language())
        return Parser(language), Query(language, CUDA_QUERY), QueryCursor
    except Exception:  # noqa: BLE001 - an import, ABI or query mismatch: colours only
        return None


class CudaHighlighter:
    """Finds the kernel strings in a Python document and lays CUDA colours over them."""

    def __init__(self, parser: Any, query: Any, cursor: Any) -> None:
        self.parser, self.query, self.cursor = parser, query, cursor
        self._python: tuple[Any, Any] | None = None  # (Language, Query) last used
        self._cache: dict[tuple[str, bytes], list[Span]] = {}

    # ---- finding the strings --------------------------------------------------------------
    def _python_query(self, document: Any) -> Any:
        language = document.language
        if self._python is None or self._python[0] is not language:
            self._python = (language, document.prepare_query(PYTHON_QUERY))
        return self._python[1]

    def find(self, document: Any, source: bytes) -> list[tuple[Any, str]]:
        """(string node, UNIT or BODY) for every CUDA string of a SyntaxAwareDocument whose
        UTF-8 text is `source`."""
        if not any(word in source for word in HINTS):
            return []  # a PyTorch exercise: no query at all
        captures = document.query_syntax_tree(self._python_query(document))
        chosen: dict[int, tuple[Any, str]] = {}  # by start byte: one entry per string

        def take(node: Any, mode: str) -> None:
            for string in _strings(node):
                if chosen.get(string.start_byte, (None, BODY))[1] == BODY:
                    chosen[string.start_byte] = (string, mode)

        named: list[tuple[bytes, str]] = []
        for call in captures.get("kernel_call", []):
            fn = call.child_by_field_name("function")
            if fn.type == "attribute":
                fn = fn.child_by_field_name("attribute")
            wanted = CODE_ARGS.get(_text(source, fn).decode())
            if wanted is None:  # the query's #any-of? already says no; a grammar change might not
                continue
            position = 0
            for arg in call.child_by_field_name("arguments").named_children:
                if arg.type == "keyword_argument":
                    key: int | str = _text(source, arg.child_by_field_name("name")).decode()
                    value = arg.child_by_field_name("value")
                elif arg.type in ("list_splat", "dictionary_splat", "comment"):
                    continue
                else:
                    key, value, position = position, arg, position + 1
                mode = wanted.get(key)
                if mode is None or value is None:
                    continue
                if value.type == "identifier":
                    named.append((_text(source, value), mode))
                else:
                    take(value, mode)
        if named:
            values: dict[bytes, list[Any]] = {}
            for assignment in captures.get("assignment", []):
                name = _text(source, assignment.child_by_field_name("left"))
                values.setdefault(name, []).append(assignment.child_by_field_name("right"))
            for name, mode in named:
                for value in values.get(name, []):
                    take(value, mode)
        for string in captures.get("string", []):
            if string.start_byte in chosen or string.parent.type == "expression_statement":
                continue  # a docstring that mentions __global__ is prose
            if any(marker in _text(source, string) for marker in MARKERS):
                take(string, UNIT)
        return sorted(chosen.values(), key=lambda item: item[0].start_byte)

    # ---- colouring them -------------------------------------------------------------------
    def strings(self, document: Any, source: bytes) -> list[CudaString]:
        """Every CUDA kernel string in the Python source, with the colour spans inside it."""
        out = []
        for node, mode in self.find(document, source):
            inner = _inside_quotes(node)
            if inner is None:
                continue
            (start_byte, start), (end_byte, end) = inner
            relative = self._spans(source[start_byte:end_byte], mode)
            out.append(CudaString(start, end, [_shift(span, start) for span in relative]))
        return out

    def _spans(self, text: bytes, mode: str) -> list[Span]:
        """The CUDA spans of `text`, in points relative to its first byte."""
        key = (mode, text)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        head = len(BODY_OPEN) if mode == BODY else 0
        parsed = BODY_OPEN + text + BODY_CLOSE if mode == BODY else text
        tree = self.parser.parse(parsed)
        best: dict[tuple[int, int], tuple[int, str, Any]] = {}
        for pattern, captures in self.cursor(self.query).matches(tree.root_node):
            for name, nodes in captures.items():
                for node in nodes:
                    span = (node.start_byte, node.end_byte)
                    if node.start_byte < head or node.end_byte > head + len(text):
                        continue  # the wrapper around a fragment, or text running into it
                    if span[0] < span[1] and pattern >= best.get(span, (-1,))[0]:
                        best[span] = (pattern, name, node)
        spans = []
        for _, name, node in sorted(best.values(), key=lambda item: item[0]):
            (r0, c0), (r1, c1) = node.start_point, node.end_point
            spans.append((r0, c0 - head if r0 == 0 else c0, r1, c1 - head if r1 == 0 else c1, name))
        if len(self._cache) >= CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = spans
        return spans

    def overlay(self, document: Any, highlights: dict[int, list[Highlight]]) -> None:
        """Replace the string colour inside every kernel string with its CUDA colours.
        `highlights` is the TextArea's map: row -> [(start byte, end byte or None, name)]."""
        source = document.text.encode("utf-8")
        for found in self.strings(document, source):
            (row0, col0), (row1, col1) = found.start, found.end
            for row in range(row0, row1 + 1):
                lo = col0 if row == row0 else 0
                hi = col1 if row == row1 else None
                if hi is None or hi > lo:
                    highlights[row] = _cut(highlights.get(row, []), lo, hi)
            for r0, c0, r1, c1, name in found.spans:
                for row in range(r0, r1 + 1):
                    lo = c0 if row == r0 else 0
                    hi = c1 if row == r1 else None
                    if hi is None or hi > lo:
                        highlights[row].append((lo, hi, name))


def _text(source: bytes, node: Any) -> bytes:
    return source[node.start_byte : node.end_byte]


def _strings(node: Any) -> list[Any]:
    """The string literals a value is made of: "a", ("a" "b"), ("a")."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "string":
        return [node]
    if node.type == "concatenated_string":
        return [child for child in node.named_children if child.type == "string"]
    return []


def _inside_quotes(string: Any) -> tuple[tuple[int, Point], tuple[int, Point]] | None:
    """(byte, point) where the text between the quotes starts and ends; None for an f-string
    with {...} parts, or a string left open."""
    children = string.children
    if len(children) < 2 or children[0].type != "string_start" or children[-1].type != "string_end":
        return None
    if any(child.type == "interpolation" for child in children):
        return None
    first, last = children[0], children[-1]
    return (first.end_byte, first.end_point), (last.start_byte, last.start_point)


def _shift(span: Span, origin: Point) -> Span:
    r0, c0, r1, c1, name = span
    row, col = origin
    return row + r0, c0 + col if r0 == 0 else c0, row + r1, c1 + col if r1 == 0 else c1, name


def _cut(row: list[Highlight], lo: int, hi: int | None) -> list[Highlight]:
    """A row's highlights less the columns [lo, hi) (hi None: to the end of the line)."""
    out: list[Highlight] = []
    for start, end, name in row:
        if (end is not None and end <= lo) or (hi is not None and start >= hi):
            out.append((start, end, name))
            continue
        if start < lo:
            out.append((start, lo, name))
        if hi is not None and (end is None or end > hi):
            out.append((hi, end, name))
    return out
