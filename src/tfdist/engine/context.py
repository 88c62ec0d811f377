"""What a rule sees: the analysis, the edit plan, the backend, findings.

Rules build new code from small source templates (``{hvd}.size()``) that
the context fills with the names bound in *this* file and parses with the
file's own indentation, newline and quote conventions.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from .. import apis
from . import findings as F
from .analysis import Analysis
from .edits import EditPlan


def literal_placeholder(names) -> "re.Pattern":
    """The placeholders a backend's templates use for names bound in the
    user's file (``{hvd}``, ``{tf}``...), as a pattern. A file containing one
    of them literally (say ``f"{tf}"``) could not be told apart from a
    template; such files are refused rather than risked."""
    return re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}")


# Parsed template expressions, shared across files converted in a process.
_PARSED: Dict[tuple, cst.BaseExpression] = {}


class Unsupported(Exception):
    """A rule cannot convert this file safely. Nothing is written."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


class ImportScheduler:
    """Imports rules need, inserted once each by the engine.

    It also knows where module-level setup code can go: after the leading
    block of imports, and after the statement importing TensorFlow.
    """

    def __init__(self, analysis: Analysis):
        self.a = analysis
        self.module = analysis.module
        self.bound: Dict[str, str] = {}  # local name -> module it binds
        self.bound_stmt: Dict[str, cst.BaseStatement] = {}  # local name -> the import statement binding it first
        self.import_stmt: Dict[str, cst.BaseStatement] = {}  # module -> its statement
        # modules of the file's own imports the inserted code reads: it goes after them
        self.read_by_setup: set = set()
        self.global_names = self._global_names()
        self.leading_end: Optional[cst.BaseStatement] = None
        self._scan()
        self.requested: List[Tuple[str, str]] = []  # (module, alias) to insert
        self.reused: List[Tuple[str, str]] = []  # (module, local name) the script imports itself

    def _global_names(self) -> set:
        return set(self.a.scopes.module_scope.bindings)

    def _scan(self) -> None:
        body = self.module.body
        leading = True
        for i, stmt in enumerate(body):
            is_import = isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
            )
            # a string statement (the docstring, or the text blocks of a script written as a notebook
            # -- keras-io's title and introduction): documentation, no end of the leading imports
            is_doc = isinstance(stmt, cst.SimpleStatementLine) and isinstance(
                stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            if is_import:
                for small in stmt.body:
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            mod = self.a.code(alias.name)
                            local = alias.asname.name.value if alias.asname else mod.split(".")[0]
                            self.bound.setdefault(local, mod if alias.asname else mod.split(".")[0])
                            self.bound_stmt.setdefault(local, stmt)
                            self.import_stmt.setdefault(mod, stmt)
                    elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                        mod = self.a.code(small.module)
                        self.import_stmt.setdefault(mod, stmt)
                        if not isinstance(small.names, cst.ImportStar):
                            for alias in small.names:
                                full = f"{mod}.{self.a.code(alias.name)}"
                                local = alias.asname.name.value if alias.asname else self.a.code(alias.name)
                                self.bound.setdefault(local, full)
                                self.bound_stmt.setdefault(local, stmt)
                if leading:
                    self.leading_end = stmt
            elif not is_doc and not _is_future_or_trivial(stmt):
                leading = False

    def name_for(self, module: str) -> Optional[str]:
        for local, mod in self.bound.items():
            if mod == module:
                return local
        return None

    def tensorflow(self) -> str:
        """A module-level name bound to TensorFlow (v1 compat is fine too)."""
        for mod in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"):
            n = self.name_for(mod)
            if n:
                if (mod, n) not in self.reused:
                    self.reused.append((mod, n))  # imported again with the setup if the script imports it later
                return n
        return self.require("tensorflow", "tf")

    def keras(self) -> str:
        n = self.name_for("keras")
        if n:
            self.read_by_setup.add("keras")
        return n or self.require("keras", "keras")

    def free_name(self, preferred: str) -> str:
        name = preferred
        while name in self.global_names and self.bound.get(name) is None:
            name = "_" + name
        return name

    def require(self, module: str, alias: str) -> str:
        existing = self.name_for(module)
        if existing:
            if (module, existing) not in self.reused:
                self.reused.append((module, existing))
            return existing
        alias = self.free_name(alias)
        self.bound[alias] = module
        self.requested.append((module, alias))
        return alias

    def anchor_for_imports(self) -> Optional[cst.BaseStatement]:
        for mod in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2", "tensorflow.keras", "keras"):
            if mod in self.import_stmt:
                return self.import_stmt[mod]
        for mod, stmt in self.import_stmt.items():
            if mod.startswith(("tensorflow", "keras")):
                return stmt
        return self.leading_end

    def first_framework_import(self) -> Optional[cst.BaseStatement]:
        """The module's first statement importing TensorFlow or Keras (any
        submodule: ``from tensorflow.keras import layers`` imports TensorFlow
        too), where what must be set before TensorFlow loads goes; else the
        imports' anchor."""
        body = list(self.module.body)
        found = [stmt for mod, stmt in self.import_stmt.items()
                 if mod.split(".")[0] in apis.FRAMEWORK_ROOTS and stmt in body]
        return min(found, key=body.index) if found else self.anchor_for_imports()

    def anchor_for_setup(self) -> Optional[cst.BaseStatement]:
        """Setup goes after the leading imports and after the TensorFlow import."""
        body = list(self.module.body)
        candidates = [s for s in (self.leading_end, self.anchor_for_imports()) if s is not None]
        candidates += [self.import_stmt[m] for m in self.read_by_setup
                       if m in self.import_stmt and self.import_stmt[m] in body]
        if not candidates:
            return None
        return max(candidates, key=body.index)


def _is_future_or_trivial(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Pass,)) for s in stmt.body)


class Context:
    def __init__(self, analysis: Analysis, backend, path: str):
        self.a = analysis
        self.module = analysis.module
        self.path = path
        self.backend = backend
        self.plan = EditPlan()
        self.imports = ImportScheduler(analysis)
        self.changes: List[F.Finding] = []
        self.warnings: List[F.Finding] = []
        self.patterns: set = set()  # the training patterns detected in the module
        # Facts rules establish for the backend and for each other (the
        # engine reads none of them), e.g. which Keras the file uses.
        self.facts: Dict[str, object] = {}
        self.quote = _preferred_quote(self.a.scopes.by_type.get(cst.SimpleString, ()))
        self._names: Dict[str, str] = {}
        self._name_keys = tuple(backend.placeholder_names())
        self._state: Dict[str, object] = {}
        # Module-level classes and functions the converted code calls,
        # (template, comment): placed once, right after the start-up code.
        self.definitions: List[tuple] = []

    def define(self, template: str, comment: Optional[str] = None) -> None:
        """A class or function the converted code needs at module level,
        defined after the start-up code (so it may use the engine's names)."""
        self.definitions.append((template, comment))

    # ---------------------------------------------------------- rule state
    def state(self, key: str, factory: Callable[[], object] = set):
        """State a rule keeps for this conversion, created on first use
        (``factory()``: a set by default). Keys are the rules' own (by
        convention their module's name); the engine knows none of them."""
        try:
            return self._state[key]
        except KeyError:
            value = self._state[key] = factory()
            return value

    # ---------------------------------------------------------- findings
    def change(self, node: cst.CSTNode, rule: str, message: str, through: Optional[cst.CSTNode] = None) -> None:
        """A change at node (and down to the end of ``through``, for edits of a run of statements)."""
        end = self.a.end_line(through if through is not None else node)
        self.changes.append(F.Finding(rule, self.a.line(node), self.a.col(node), F.INFO, message, True, end))

    def warn(self, node: Optional[cst.CSTNode], rule: str, message: str) -> None:
        line = self.a.line(node) if node is not None else 1
        col = self.a.col(node) if node is not None else 1
        f = F.Finding(rule, line, col, F.WARNING, message, False)
        if all((w.line, w.rule, w.message) != (f.line, f.rule, f.message) for w in self.warnings):
            self.warnings.append(f)

    def unsupported(self, node: Optional[cst.CSTNode], message: str) -> Unsupported:
        return Unsupported(self.a.line(node) if node is not None else 1, message)

    # ---------------------------------------------------------- templates
    def name(self, key: str) -> str:
        """Names templates use (the backend's placeholders, e.g. {hvd}, {tf})."""
        if key not in self._names:
            self._names[key] = self.backend.bind_name(self, key)
        return self._names[key]

    def bound_names(self) -> set:
        """The backend placeholders some template used (so far)."""
        return set(self._names)

    def fill(self, template: str, **values: str) -> str:
        """Substitute ``{hvd}``-style names and given values, in one pass.

        Only these exact placeholders are replaced, and substituted text is
        never scanned again: braces in the user's own code (f-strings,
        ``"ckpt-{epoch}"``, dict literals) pass through untouched.
        """
        keys = set(self._name_keys) | set(values)
        pattern = re.compile(r"\{(" + "|".join(sorted(map(re.escape, keys))) + r")\}")

        def sub(m):
            k = m.group(1)
            return values[k] if k in values else self.name(k)

        return pattern.sub(sub, template)

    def say(self, template: str, **values: str) -> str:
        """A message (or comment) for the user in the backend's words.

        ``{engine}``, ``{rank}``, ``{size}``, ``{chief}``... are the
        backend's ``message_words()``; other placeholders are the given
        values. One pass, as in :meth:`fill`: substituted text (the user's
        code) is never scanned again, and other braces pass through.
        """
        table = {**self.backend.message_words(), **values}
        pattern = re.compile(r"\{(" + "|".join(sorted(map(re.escape, table))) + r")\}")
        return pattern.sub(lambda m: table[m.group(1)], template)

    def quoted(self, text: str) -> str:
        """A string literal in the file's preferred quote style."""
        q = self.quote
        return q + text.replace("\\", "\\\\").replace(q, "\\" + q) + q

    def expr(self, template: str, **values: str) -> cst.BaseExpression:
        text = self.fill(template, **values)
        key = (text, self.module.default_newline)
        node = _PARSED.get(key)
        if node is None:  # parsed nodes are immutable: safe to share
            try:
                node = cst.parse_expression(text, config=self.module.config_for_parsing)
            except cst.ParserSyntaxError:
                if not any("\n" in v for v in values.values()):
                    raise
                # a value spanning lines whose parentheses belong to an outer expression
                # (``(tf.data.Dataset\n    .from_tensor_slices(x)\n    .map(f))``): its own now
                node = cst.parse_expression(self.fill(template, **{k: f"({v})" if "\n" in v else v
                                                                   for k, v in values.items()}),
                                            config=self.module.config_for_parsing)
            _PARSED[key] = node
            if len(_PARSED) > 4096:
                _PARSED.clear()
        return node

    def around(self, template: str, hole: str = "HOLE") -> Callable[[cst.CSTNode], cst.CSTNode]:
        """A replacement (for ``plan.replace``) putting the node, in its
        updated form, where ``{hole}`` stands in the template: edits other
        rules made inside the node (a keyword added to a call) are kept."""
        marker = "__tfdist_hole__"
        shell = self.expr(template.replace("{" + hole + "}", marker))

        class _Fill(cst.CSTTransformer):
            def __init__(self, node):
                super().__init__()
                self.node = node

            def leave_Name(self, original, updated):
                return self.node if original.value == marker else updated

        return lambda old: shell.visit(_Fill(old))

    def stmts(self, template: str, comment: Optional[str] = None, **values: str) -> List[cst.BaseStatement]:
        text = self.fill(template, **values)
        indent = self.module.default_indent
        lines = []
        for line in text.strip("\n").split("\n"):
            stripped = line.lstrip(" ")
            depth = (len(line) - len(stripped)) // 4
            lines.append(indent * depth + stripped)
        # Parsed on its own with the file's indentation, the new statements
        # carry no explicit indent or newline, so they render in the file's.
        body = list(cst.parse_module("\n".join(lines) + "\n").body)
        if comment and body:
            body[0] = body[0].with_changes(
                leading_lines=[cst.EmptyLine(comment=cst.Comment("# " + comment))])
        return body

    def code(self, node: cst.CSTNode) -> str:
        return self.a.code(node)


def _preferred_quote(strings) -> str:
    single = double = 0
    for node in strings:
        q = node.quote
        if q == "'":
            single += 1
        elif q == '"':
            double += 1
    return "'" if single > double else '"'
