"""Line and column of every node, from one code-generation pass.

Same numbers as LibCST's PositionProvider (syntactic positions: a
statement starts at its first token, not at the comments above it), at a
fraction of its cost: positions are plain tuples, a token without a newline
costs one addition, and the syntactic-position hook is a small object, not
a generator-based context manager. The pass also yields the module's code.
"""
from __future__ import annotations

import re
from typing import Dict, Tuple

import libcst as cst

try:  # where LibCST's own PositionProvider takes it from (libcst >= 0.3)
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - a future LibCST moved it: use the provider
    CodegenState = None

# (start line, start column, end line, end column); lines 1-based, columns 0-based
Span = Tuple[int, int, int, int]

_NEWLINE = re.compile(r"\r\n?|\n")


class _Syntactic:
    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node):
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self):
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc):
        st = self.state
        spans = st.spans
        start = spans[self.start_node][:2] if self.start_node is not None else self.start
        end = spans[self.end_node][2:] if self.end_node is not None else (st.line, st.column)
        spans[self.node] = (start[0], start[1], end[0], end[1])
        return False


class _PositionState(CodegenState or object):
    def __init__(self, module: cst.Module):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.starts = []
        self.spans: Dict[cst.CSTNode, Span] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node) -> None:
        line, column = self.starts.pop()
        if node not in self.spans:  # a syntactic position was recorded already
            self.spans[node] = (line, column, self.line, self.column)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


def compute(module: cst.Module) -> Tuple[Dict[cst.CSTNode, Span], str, "Pieces"]:
    """(node -> span, the module's code, the code of its top-level parts)."""
    if CodegenState is None:  # pragma: no cover
        from libcst.metadata import MetadataWrapper, PositionProvider

        ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        spans = {n: (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in ranges.items()}
        return spans, module.code, Pieces(module, {})
    state = _PositionState(module)
    # What Module._codegen does, with the tokens each top-level part wrote
    # kept apart: a statement at the top level has no indentation, so its
    # tokens are exactly what code_for_node would write for it.
    tokens, parts = state.tokens, {}
    state.before_codegen(module)
    for node in (*module.header, *module.body, *module.footer):
        start = len(tokens)
        node._codegen(state)
        parts[node] = (start, len(tokens))
    if module.has_trailing_newline:
        if not tokens:
            state.add_token(state.default_newline)
    else:
        state.pop_trailing_newline()
    state.after_codegen(module)
    text = "".join(tokens)
    return state.spans, text, Pieces(module, {n: "".join(tokens[i:j]) for n, (i, j) in parts.items()})


class Pieces:
    """The code of a module's top-level parts (header lines, statements,
    footer lines) as the position pass wrote them: the code of an edited
    module is the unchanged parts' text and only the new parts generated."""

    __slots__ = ("module", "text")

    def __init__(self, module: cst.Module, text: Dict[cst.CSTNode, str]):
        self.module = module
        self.text = text

    def code(self, new: cst.Module) -> str:
        """``new.code``, generating only the parts ``new`` does not share
        with the original module."""
        old = self.module
        if not self.text or not new.has_trailing_newline or new.default_newline != old.default_newline \
                or new.default_indent != old.default_indent:
            return new.code
        if not (new.header or new.body or new.footer):
            return new.default_newline
        known = self.text
        out = []
        for node in (*new.header, *new.body, *new.footer):
            piece = known.get(node)
            out.append(piece if piece is not None else new.code_for_node(node))
        return "".join(out)
