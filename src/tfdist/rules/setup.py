"""Start-up code: ``hvd.init()``, one GPU per process, Keras 3 guard, then
the module-level classes and functions other rules asked for
(``ctx.define``: a warmup schedule...), which may use the engine's names.

Runs after the pattern rules (they decide which Horovod module the file
needs) and places the code right after the file's imports.
"""
from __future__ import annotations

import libcst as cst
from ..facts import keras_models
from ..facts import kinds
from ..engine.rule import Rule, register


RULE = kinds.SETUP


def apply(ctx) -> None:
    tf2 = bool(ctx.patterns & {"Keras", "GradientTape"})
    keras3 = "Keras" in ctx.patterns
    early = _before_tensorflow(ctx, keras3)
    # Fill every name first so the imports they need are scheduled. A model compiled and evaluated
    # after a tape loop needs the guard of Keras's own loops too (Keras 3 evaluate() under a strategy).
    stmts, pinned = _startup_statements(ctx, tf2, keras3 or bool(keras_models.model_calls(ctx.a, {"evaluate"})))
    imports = _requested_imports(ctx)
    anchor = ctx.imports.anchor_for_imports()
    setup_anchor = ctx.imports.anchor_for_setup()
    module = ctx.module
    blank = cst.EmptyLine()
    if stmts:
        stmts[0] = stmts[0].with_changes(leading_lines=[blank, *stmts[0].leading_lines])
    if anchor is None:
        _insert_at_start(ctx, imports, stmts)
        return
    first = _first_changed_statement(ctx)
    body = list(module.body)
    if first is not None and setup_anchor in body and body.index(first) <= body.index(setup_anchor):
        _insert_before_first_change(ctx, first, setup_anchor, early, imports, stmts)
        return
    if early:
        first_import = ctx.imports.first_framework_import()
        ctx.plan.insert_before(first_import, early)
        ctx.change(first_import, RULE, ctx.say("{engine}: environment set before TensorFlow is imported"))
    tf_imports = [s for m, s in imports if m == "tensorflow"]
    hvd_imports = [s for m, s in imports if m != "tensorflow"] + _imported_too_late(ctx, setup_anchor)
    ctx.plan.insert_after(anchor, tf_imports + hvd_imports)
    ctx.plan.insert_after(setup_anchor, stmts)
    if ctx.definitions:
        _two_blank_lines_after(ctx, setup_anchor)
    ctx.change(setup_anchor, RULE, ctx.say("{engine} initialised after the imports") + (", one GPU per process" if pinned else ""))


def _startup_statements(ctx, tf2: bool, keras3: bool):
    """(statements, pinned): the backend's start-up code, commented, then the module-level
    definitions other rules asked for; pinned when it pins a GPU per process."""
    stmts = []
    templates = ctx.backend.setup(ctx, tf2=tf2, keras3_guard=keras3)
    pinned = any(isinstance(t, str) and "GPU" in t for t in templates)
    for i, template in enumerate(templates):
        if isinstance(template, tuple):  # (template, comment): the backend's own words
            template, comment = template
            stmts += ctx.stmts(template, comment=comment)
            continue
        comment = None
        if i == 0:
            comment = ctx.say("{engine}: initialize {engine}.")
        elif "GPU" in template:
            comment = ctx.say("{engine}: pin one GPU per process (by local rank).")
        elif "SystemExit" in template:
            comment = ctx.say("{engine} cannot average gradients of Keras 3's fit: stop rather than train wrong.")
        stmts += ctx.stmts(template, comment=comment)
    for template, comment in ctx.definitions:  # after the start-up code, PEP 8 blank lines around
        body = ctx.stmts(template, comment=comment)
        body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *body[0].leading_lines])
        stmts += body
    return stmts, pinned


def _requested_imports(ctx) -> list:
    """(module, import statement) for every import the filled names scheduled."""
    imports = []
    for module, alias in ctx.imports.requested:
        last = module.rsplit(".", 1)[-1]
        text = f"import {module}" if alias == module else (
            f"import {module} as {alias}" if alias != last or "." in module else f"import {module}")
        imports.append((module, cst.parse_statement(text + "\n")))
    return imports


def _imported_too_late(ctx, setup_anchor) -> list:
    """The start-up code reads a module the script imports itself, but further down
    (``import os`` after ``import keras``; the converted script stopped with NameError):
    imported again with the others (the script's own import then changes nothing)."""
    body = list(ctx.module.body)
    out = []
    for module, local in ctx.imports.reused:
        stmt = ctx.imports.bound_stmt.get(local)  # the statement binding the name (not a `from` import of the module)
        if stmt is None or stmt not in body or setup_anchor not in body or body.index(stmt) <= body.index(setup_anchor):
            continue
        if ctx.imports.bound.get(local) != module:
            continue  # bound by a `from` import: its statement is not this module's
        text = f"import {module}" if local == module else f"import {module} as {local}"
        out.append(cst.parse_statement(text + "\n"))
    return out


def _insert_at_start(ctx, imports, stmts) -> None:
    """No module-level import to follow: the imports and start-up code at the start of the
    module, after a docstring."""
    first = ctx.module.body[0]
    is_doc = isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr) \
        and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    new = [s for _, s in imports] + stmts
    if is_doc:
        ctx.plan.insert_after(first, new)
        if ctx.definitions:
            _two_blank_lines_after(ctx, first)
    else:
        ctx.plan.insert_before(first, new)
        if ctx.definitions:
            ctx.plan.blank_lines_before(first, 2)
    ctx.change(first, RULE, ctx.say("{engine} initialised at start-up"))


def _insert_before_first_change(ctx, first, setup_anchor, early, imports, stmts) -> None:
    """The script prints or saves (now on rank 0 only) before it imports TensorFlow (a notebook's
    first cells): the engine must be up before the first statement that asks for it. The
    imports the start-up code reads are run there too (again later, as written: a no-op)."""
    body = list(ctx.module.body)
    reads = {"tensorflow"} | set(ctx.imports.read_by_setup)
    again = []
    for name in reads:
        stmt = ctx.imports.import_stmt.get(name)
        if stmt is not None and stmt in body and body.index(stmt) >= body.index(first) and stmt not in again:
            again.append(stmt)
    again.sort(key=body.index)
    copies = [stmt.with_changes(leading_lines=[]) for stmt in again]
    ctx.plan.insert_before(first, early + copies + [s for _, s in imports] + stmts)
    ctx.change(first, RULE, ctx.say("{engine} initialised before the first line it changes (TensorFlow is "
                                    "imported only at line {line})", line=str(ctx.a.line(setup_anchor))))


def _first_changed_statement(ctx):
    """The first statement of the module that holds an edit the rules
    planned (a guard, a replacement, code inserted around it), or None."""
    plan = ctx.plan
    nodes = [*plan.replacements, *plan.before, *plan.after, *plan.guards, *plan.spans]
    body = list(ctx.module.body)
    found = None
    for node in nodes:
        top = node
        while top is not None and top not in body:
            top = ctx.a.parent(top)
        if top is not None and (found is None or body.index(top) < body.index(found)):
            found = top
    return found


def _two_blank_lines_after(ctx, stmt) -> None:
    """The statement after ``stmt`` (a definition was inserted between them)."""
    parent = ctx.a.parent(stmt)
    body = list(getattr(parent, "body", ()))
    if stmt in body and body.index(stmt) + 1 < len(body):
        ctx.plan.blank_lines_before(body[body.index(stmt) + 1], 2)


def _before_tensorflow(ctx, keras_fit: bool) -> list:
    """Statements the backend needs run before TensorFlow is imported (an
    environment variable), with ``import os`` when the file has none yet at
    that point."""
    pre = getattr(ctx.backend, "pre_import", None)
    items = pre(ctx, keras_fit=keras_fit) if pre is not None else []
    if not items:
        return []
    anchor = ctx.imports.first_framework_import()
    body = list(ctx.module.body)
    stmts = []
    os_stmt = ctx.imports.import_stmt.get("os")
    if not (os_stmt is not None and anchor is not None and os_stmt in body and anchor in body
            and body.index(os_stmt) < body.index(anchor) and ctx.imports.name_for("os") == "os"):
        stmts += ctx.stmts("import os")
        ctx.imports.bound.setdefault("os", "os")
        ctx.imports.import_stmt["os"] = anchor
        ctx.imports.bound_stmt["os"] = anchor  # imported right before it now
    for template, comment in items:
        stmts += ctx.stmts(template, comment=comment)
    return stmts


@register
class Setup(Rule):
    id = "setup"
    description = "Start-up: the engine initialised, one GPU per process, then the imports and module-level code the other rules asked for."
    engines = ('horovod', 'tf-distribute', 'parameter-server')
    kinds = ('setup',)
    refuses = ""
    example = "keras/parameter_server_fit"  # converted by all three engines
    order = 100

    def apply(self, ctx) -> None:
        apply(ctx)
