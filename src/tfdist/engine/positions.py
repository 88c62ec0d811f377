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


def compute(module: cst.Module) -> Tuple[Dict[cst.CSTNode, Span], str]:
    """(node -> span, the module's code)."""
    if CodegenState is None:  # pragma: no cover
        from libcst.metadata import MetadataWrapper, PositionProvider

        ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        spans = {n: (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in ranges.items()}
        return spans, module.code
    state = _PositionState(module)
    module._codegen(state)
    return state.spans, "".join(state.tokens)
