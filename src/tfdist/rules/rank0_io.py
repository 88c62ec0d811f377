"""Files and console output on rank 0 only, for every pattern.

Model saves, checkpoint saves, TF1 ``Saver.save`` and ``print`` statements go
under ``if hvd.rank() == 0:``; summary writers are no-op writers on other
ranks. Only statements that cannot run a collective operation are guarded
(a guarded collective deadlocks): a print whose arguments call anything
but pure built-ins, for instance, is left alone -- unless that call is a
Keras model's fit / evaluate / predict, which then runs on every rank first,
bound to a new name, and the print of that name on rank 0 only.

Every other file a training run writes is written by rank 0 only too: the
module functions of ``apis.FILE_WRITE_FUNCTIONS`` (NumPy, pickle, JSON,
pyplot savefig/show, tf.io.write_file, OpenCV, imageio...), the writing
methods of objects whose kind is known from what built them
(``apis.WRITER_OBJECT_METHODS``: a PIL image's ``save``, a Figure's
``savefig``, a DataFrame's ``to_csv``), and ``with open(path, "w")``
statements, guarded whole when their body is collective-free and sets no
name used after it. A ``save`` on an object of unknown type is never
guarded. A write tfdist cannot guard safely (inside a statement that also
trains, an ``open`` for writing kept in a variable) gets a warning with
the edit to make by hand.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from ..actions.guards import guard_call, hoist_and_guard
from ..facts.collectives import call_collective_free, collective_free
from ..facts.keras_models import layer_of_a_model
from ..facts.syntax import calls_in, find_arg, method_name, receiver, source
from ..facts.tf1_train_ops import tf1_namespace
from ..facts.helper_writes import helper_write
from ..facts.writes import RULE, file_write_what, is_model_value, object_kind, open_mode
from ..actions import replicas
from ..engine.rule import Rule, register


def _saves_a_model(a: A.Analysis, expr) -> bool:
    """The receiver of save()/save_weights() is a Keras model: by its type,
    compiled like one, or called on a Keras input as a sub-model (a GAN's
    generator built by a helper module: a layer has no save())."""
    return is_model_value(a, expr) or layer_of_a_model(a, expr)


def pure_arguments(a: A.Analysis, call: cst.Call, inference: bool) -> bool:
    """True if the call's arguments can never run a collective operation
    (``inference``: Keras evaluate/predict run collectives on this engine)."""
    return all(call_collective_free(a, c, set(), inference) for arg in call.args for c in calls_in(arg))


def apply(ctx) -> None:
    a = ctx.a
    tf = None
    # Engines whose saves may run collective operations (tf.distribute) have
    # every worker save, to a path of its own; the others save on rank 0.
    every_worker = ctx.backend.worker_write_path("path") is not None
    _with_open_statements(ctx)
    _open_close_runs(ctx)
    for call in a.calls:
        if _in_guarded_statement(ctx, call):
            continue  # already on rank 0 only (a guarded ``with open(...)``)
        m = method_name(call)
        recv = receiver(call)
        names = a.names(call)
        if names & apis.CONSOLE_WRITE_FUNCTIONS:
            if pure_arguments(a, call, ctx.backend.inference_runs_collectives):
                guard_call(ctx, call, "console output")
            else:
                hoist_and_guard(ctx, call, "console output")
            continue
        if m in apis.KERAS_PRINT_METHODS and recv is not None and is_model_value(a, recv):
            guard_call(ctx, call, f"{a.code(call.func)}()")
        elif every_worker and _every_worker_saves(ctx, call, m, recv, names):
            continue
        elif m in apis.KERAS_SAVE_METHODS and recv is not None and _saves_a_model(a, recv):
            guard_call(ctx, call, f"{a.code(call.func)}()")
        elif names & apis.KERAS_SAVE_FUNCTIONS:
            guard_call(ctx, call, f"{a.code(call.func)}()")
        elif m in apis.CHECKPOINT_SAVE_METHODS and recv is not None and a.is_kind(recv, A.CHECKPOINT):
            guard_call(ctx, call, f"checkpoint {a.code(call.func)}()")
        elif m == "save" and recv is not None and a.is_kind(recv, A.SAVER):
            guard_call(ctx, call, f"{a.code(call.func)}()")
        elif apis.TF2_FILE_WRITER in names:
            tf = tf or ctx.name("tf")
            noop = f"{_summary_prefix(ctx, call)}.create_noop_writer()"
            new = ctx.expr(f"{source(a.module, call)} if {ctx.backend.is_chief()} else {noop}")
            ctx.plan.replace(call, lambda old, new=new: new)
            ctx.change(call, RULE, "summaries written on rank 0 only (a no-op writer elsewhere)")
        elif apis.TF1_FILE_WRITER in names:
            _tf1_writer(ctx, call)
        else:
            _file_write(ctx, call, names)


def _every_worker_saves(ctx, call: cst.Call, m, recv, names) -> bool:
    """Checkpoints, saved models and summaries written by every worker, each
    to its own path (the chief's is the user's); True when handled."""
    a = ctx.a
    if m in apis.KERAS_SAVE_METHODS and recv is not None and _saves_a_model(a, recv):
        return _redirect(ctx, call, "filepath", 0, f"{a.code(call.func)}()")
    if names & apis.KERAS_SAVE_FUNCTIONS:
        return _redirect(ctx, call, ("filepath", "export_dir"), 1, f"{a.code(call.func)}()")
    if m in apis.CHECKPOINT_SAVE_METHODS and recv is not None and a.is_kind(recv, A.CHECKPOINT):
        managers = [t.call for t in a.types(recv) if t.name == apis.TF2_CHECKPOINT_MANAGER and t.call is not None]
        if managers:
            for built in managers:
                if built not in ctx.state("rank0_io.redirected"):
                    ctx.state("rank0_io.redirected").add(built)
                    _redirect(ctx, built, "directory", 1, f"checkpoint manager {a.code(recv)}")
            return True
        return _redirect(ctx, call, "file_prefix", 0, f"checkpoint {a.code(call.func)}()")
    if apis.TF2_FILE_WRITER in names:
        return _redirect(ctx, call, "logdir", 0, "summary writer")
    return False


def _redirect(ctx, call: cst.Call, keyword, position: int, what: str) -> bool:
    if not replicas.write_path(ctx, call, keyword, position, what):
        ctx.warn(call, RULE, ctx.say("{what}: every worker must run it, each writing to a path of its own "
                                     "(the chief to the real one): cannot find its path", what=what))
    return True


def _summary_prefix(ctx, call: cst.Call) -> str:
    if isinstance(call.func, cst.Attribute):
        return ctx.a.code(call.func.value)
    return f"{ctx.name('tf')}.summary"


def _tf1_writer(ctx, call: cst.Call) -> None:
    """A TF1 FileWriter exists on rank 0 only; its uses are guarded."""
    a = ctx.a
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)):
        ctx.warn(call, RULE, "create this FileWriter on rank 0 only by hand")
        return
    name = small.targets[0].target.value
    guard_call(ctx, call, "summary FileWriter")
    for c in a.calls:
        if isinstance(receiver(c), cst.Name) and receiver(c).value == name and a.line(c) > a.line(call):
            s = a.statement_of(c)
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr):
                if ctx.plan.guard(s, ctx.expr(ctx.backend.is_chief())):
                    ctx.change(c, RULE, f"{a.code(c.func)}() on rank 0 only")
            else:
                ctx.warn(c, RULE, ctx.say("{name} exists on rank 0 only: guard this use with {chief}", name=name))


# ------------------------------------------------------------------ other files
def _chief_text(ctx) -> str:
    """The backend's rank-0 test as the user will read it (``hvd.rank() == 0``)."""
    return ctx.fill(ctx.backend.is_chief())


def _in_guarded_statement(ctx, node: cst.CSTNode) -> bool:
    guards, spans = ctx.plan.guards, _guarded_spans(ctx)
    if not guards and not spans:
        return False
    return any(p in guards or p in spans for p in ctx.a.ancestors(node))


def _guarded_spans(ctx) -> set:
    """Statements put under one rank-0 guard together (an open ... close run)."""
    return ctx.state("rank0_io.spans")


def _first_collective(a: A.Analysis, node: cst.CSTNode, inference: bool):
    """The first call in node that may run a collective operation, or None."""
    for c in calls_in(node):
        if not collective_free(a, c, inference):
            return c
    return None


def _file_write(ctx, call: cst.Call, names) -> None:
    a = ctx.a
    what = file_write_what(a, call)
    if what is not None:
        _guard_write(ctx, call, what)
        return
    if not names & apis.FILE_OPEN_FUNCTIONS.keys():
        _helper_write(ctx, call)
        return
    mode = open_mode(a, call)
    if mode is False or isinstance(a.parent(call), cst.WithItem) or call in ctx.state("rank0_io.opened_on_chief"):
        return  # not a write; a ``with open(...)`` is handled with its body; opened on rank 0 only already
    stmt = a.statement_of(call)
    if stmt is not None and any(file_write_what(a, c) for c in calls_in(stmt)):
        return  # open(...) passed to a write: guarded (or warned about) with it
    if mode is None:
        ctx.warn(call, RULE, f"{a.code(call.func)}() with a mode tfdist cannot read: if it writes, "
                             f"run it on rank 0 only: wrap the code writing this file in `if {_chief_text(ctx)}:`")
        return
    kept = (f"file {_file_name(a, call)} opened for writing outside a with-statement: open, write and close it on "
            f"rank 0 only: wrap that code in `if {_chief_text(ctx)}:` (or write it in a `with` block tfdist can guard)")
    unguarded = ctx.state("rank0_io.unguarded_runs", dict).get(call)
    if unguarded is not None:
        run, reason = unguarded
        kept = (f"file {_file_name(a, call)} opened for writing outside a with-statement; the statements that "
                f"write and close it (lines {a.line(run[0])}-{a.line(run[-1])}) cannot run on rank 0 only as they "
                f"are: that code {reason}. Open, write and close the file in `if {_chief_text(ctx)}:` and "
                f"compute the rest on every rank")
    _guard_write(ctx, call, f"file {_file_name(a, call)} write", kept=kept)


def _helper_write(ctx, call: cst.Call) -> None:
    """``save_images(generator, epoch)`` of another module of the project that writes a file and runs no
    collective: the call, whose result is not kept, on rank 0 only (that module is left as it is)."""
    a, inference = ctx.a, ctx.backend.inference_runs_collectives
    stmt = a.statement_of(call)
    whole = isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
    what = helper_write(a, call, inference) if whole and stmt.body[0].value is call else None
    if what is not None and pure_arguments(a, call, inference):
        guard_call(ctx, call, f"{a.code(call.func)}(), which writes {what},")


def _guard_write(ctx, call: cst.Call, what: str, kept: "str | None" = None) -> None:
    """Guard the statement holding a write when all of it is collective-free."""
    a = ctx.a
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    # plt.title(t); plt.show(): a line of calls only (no name bound) is guarded whole
    calls_only = isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, cst.Expr) for s in stmt.body)
    chief = _chief_text(ctx)
    blocker = _first_collective(a, stmt, ctx.backend.inference_runs_collectives) if stmt is not None else call
    if calls_only and blocker is None:
        if ctx.plan.guard(stmt, ctx.expr(ctx.backend.is_chief())):
            ctx.change(stmt, RULE, f"{what} on rank 0 only")
            if a.is_name(call, apis.FILE_WRITE_PATH_FIRST):
                _read_back(ctx, call, find_arg(call, ("file", "fname", "filename", "path", "uri"), 0), stmt)
    elif blocker is not None:
        ctx.warn(call, RULE, f"{what} in the same statement as {a.code(blocker.func)}(), which may run a "
                             f"collective operation: compute that on every rank first, then run this write "
                             f"on rank 0 only: wrap it in `if {chief}:`")
    elif kept is not None:
        ctx.warn(call, RULE, kept)
    elif isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        ctx.warn(call, RULE, f"{what} whose result is kept: run this write on rank 0 only: wrap it in "
                             f"`if {chief}:` and give the result a value on the other ranks")
    else:
        ctx.warn(call, RULE, f"{what} inside a larger statement: run this write on rank 0 only: "
                             f"wrap it in `if {chief}:`")


def _with_open_statements(ctx) -> None:
    """``with open(path, "w") as f: ...``: the whole statement on rank 0 only."""
    a = ctx.a
    for w in a.withs:
        modes = [open_mode(a, item.item) if isinstance(item.item, cst.Call) else False for item in w.items]
        if True not in modes:
            if None in modes:
                call = w.items[modes.index(None)].item
                ctx.warn(call, RULE, f"{a.code(call.func)}() with a mode tfdist cannot read: if it writes, "
                                     f"run this with-statement on rank 0 only: wrap it in `if {_chief_text(ctx)}:`")
            continue
        if _in_guarded_statement(ctx, w) or a.statement_of(w) is not w:
            continue
        opener = w.items[modes.index(True)].item
        reason = _unguardable_body(a, w, ctx.backend.inference_runs_collectives)
        if reason is None:
            if ctx.plan.guard(w, ctx.expr(ctx.backend.is_chief())):
                ctx.change(w, RULE, f"file {_file_name(a, opener)} written on rank 0 only")
                _read_back(ctx, opener, find_arg(opener, ("file", "name"), 0), w)
        else:
            ctx.warn(opener, RULE, f"file {_file_name(a, opener)} is opened for writing on every rank by a "
                                   f"with-statement that {reason}: open and write this file on rank 0 only: "
                                   f"wrap the open and each write in `if {_chief_text(ctx)}:`")


def _open_close_runs(ctx) -> None:
    """``f = open(path, "w")``, writes, ``f.close()``: the run of statements
    of one block from the open to the last use of the file (and of any other
    file opened for writing among them) on rank 0 only, as one block, when
    nothing in it runs a collective operation, leaves early, or sets a name
    used after it."""
    a = ctx.a
    chief = ctx.expr(ctx.backend.is_chief())
    for call in a.calls:
        run = _open_run(ctx, call)
        if run is None:
            continue
        reason = _unguardable_run(a, run, ctx.backend.inference_runs_collectives)
        if reason is not None:
            if not _guard_each_use(ctx, call):
                ctx.state("rank0_io.unguarded_runs", dict)[call] = (run, reason)  # said where the open is warned about
            continue

        def build(inner, leading, chief=chief):
            first = inner[0].with_changes(leading_lines=[])
            return [cst.If(test=chief, body=cst.IndentedBlock(body=[first] + list(inner[1:])), leading_lines=leading)]
        if ctx.plan.regroup(run, build):
            _guarded_spans(ctx).update(run)
            done = "opened (the file object is not used again)" if len(run) == 1 else "opened, written and closed"
            ctx.change(run[0], RULE, f"file {_file_name(a, call)} {done} on rank 0 only "
                                     f"(lines {a.line(run[0])}-{a.end_line(run[-1])})", through=run[-1])
            _read_back(ctx, call, find_arg(call, ("file", "name"), 0), run[-1])


def _guard_each_use(ctx, call: cst.Call) -> bool:
    """``f = open(path, "w")`` whose statements in between cannot all run
    on rank 0 only (training steps between the writes): when every use of
    the file object is a statement of its own writing to it or closing it
    (``f.write(line)``, ``f.flush()``, ``print(x, file=f)``) with arguments
    that run no collective, the open becomes ``open(...) if <chief> else
    None`` and each of those statements runs on rank 0 only. False (nothing
    done) otherwise."""
    a = ctx.a
    name = _opened_name(a, call)
    uses = a.reads_bound_to(name.value, call) if name is not None else []
    statements = []
    for use in uses:
        parent = a.parent(use)
        if isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in apis.FILE_OBJECT_WRITE_METHODS:
            written = a.parent(parent)
            if not (isinstance(written, cst.Call) and written.func is parent):
                return False
        elif isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "file" \
                and isinstance(a.parent(parent), cst.Call) and a.names(a.parent(parent)) & {"builtins.print"}:
            written = a.parent(parent)
        else:
            return False
        stmt = a.statement_of(written)
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not (isinstance(small, cst.Expr) and small.value is written and pure_arguments(
                a, written, ctx.backend.inference_runs_collectives)):
            return False
        statements.append((stmt, written))
    if not statements:
        return False
    chief = ctx.backend.is_chief()
    new = ctx.expr(f"{source(a.module, call)} if {chief} else None")
    ctx.plan.replace(call, lambda old: new)
    ctx.state("rank0_io.opened_on_chief").add(call)
    ctx.change(call, RULE, f"file {_file_name(a, call)} opened on rank 0 only (None elsewhere): the code between its "
                           f"writes runs on every rank, each write on rank 0 only")
    for stmt, written in statements:
        if ctx.plan.guard(stmt, ctx.expr(chief)):
            ctx.change(written, RULE, f"{a.code(written.func)}() on rank 0 only")
    _read_back(ctx, call, find_arg(call, ("file", "name"), 0), max((s for s, _ in statements), key=a.end_line))
    return True


def _open_run(ctx, call: cst.Call):
    """The statements from ``name = open(path, "w")`` to the last one of its
    block using a file opened for writing there; None when the open is not
    such an assignment, or a file is used outside that block."""
    a = ctx.a
    if not a.names(call) & apis.FILE_OPEN_FUNCTIONS.keys() or open_mode(a, call) is not True:
        return None
    stmt = a.statement_of(call)
    if stmt is None or stmt in _guarded_spans(ctx) or _in_guarded_statement(ctx, stmt):
        return None
    block = a.parent(stmt)
    body = list(getattr(block, "body", ()))
    if stmt not in body:
        return None
    start = end = body.index(stmt)
    opened, seen = [call], set()
    name = _opened_name(a, call)
    if name is not None and not a.reads_bound_to(name.value, call):
        return [stmt]  # ``log = open(path, "w+")`` and the file object never read: the open alone
    while opened:
        opener = opened.pop()
        if opener in seen:
            continue
        seen.add(opener)
        name = _opened_name(a, opener)
        if name is None:
            return None
        for use in a.reads_bound_to(name.value, opener):
            at = next((i for i, s in enumerate(body) if _within(a, use, s)), None)
            if at is None or at < start:
                return None
            if at > end:
                end = at
                opened += [c for s in body[start:end + 1] for c in calls_in(s)
                           if a.names(c) & apis.FILE_OPEN_FUNCTIONS.keys() and open_mode(a, c) is True]
    run = body[start:end + 1]
    return run if len(run) > 1 else None


def _opened_name(a: A.Analysis, opener: cst.Call):
    stmt = a.statement_of(opener)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and small.value is opener and len(small.targets) == 1 \
            and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target
    return None


def _unguardable_run(a: A.Analysis, run, inference: bool):
    """Why these consecutive statements cannot run on rank 0 only (a
    phrase), or None when they can: a collective operation, an early exit,
    a definition, a change to something else than a name, or a name set
    there and read after them."""
    for stmt in run:
        blocker = _first_collective(a, stmt, inference)
        if blocker is not None:
            return f"also runs {a.code(blocker.func)}(), which may run a collective operation"
        for node in walk(stmt):
            if isinstance(node, _EXITS):
                return "leaves it early or yields"
            if isinstance(node, _DEFINITIONS):
                return "defines or imports names"
            if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
                targets = [node.target]
                while targets:
                    target = targets.pop()
                    if isinstance(target, (cst.Tuple, cst.List)):
                        targets += [e.value for e in target.elements]
                    elif not isinstance(target, cst.Name):
                        return f"changes {a.code(target)}"
            if isinstance(node, cst.Name) and any(b.node is node for b in a.scopes.lookup(node)):
                # the reads this binding reaches: one after a rebinding (``f = open(path, "rb")``
                # after the write) means the new value
                outside = [r for r in a.scopes.references(node)
                           if not any(_within(a, r, s) for s in run) and not _rebound_around(a, r, run[0])
                           and any(b.node is node for b in a.bindings_of(r))]
                if outside:
                    return f"sets {node.value}, which is used after it (line {a.line(outside[0])})"
    return None


def _read_back(ctx, opener: cst.Call, path: "cst.Arg | None", last: cst.CSTNode) -> None:
    """The file ``opener`` writes at ``path`` (now on rank 0 only, up to
    ``last``) is used again after it by code every rank runs -- read,
    unpacked, removed: the other ranks could get there before rank 0
    finished writing it (or find an old copy). Warned: they must wait for it."""
    a = ctx.a
    if path is None or _never_runs(a, last):
        return
    path = path.value
    same = _same_path(a, path)
    if same is None:
        return
    for call in a.calls:
        if a.line(call) <= a.end_line(last) or _in_guarded_statement(ctx, call):
            continue
        if any(n == "builtins.print" or n.startswith("logging.") or n in ("builtins.str", "builtins.repr")
               for n in a.names(call)) or a.is_name(call, apis.FILE_PRESENTERS) \
                or (method_name(call) or "").startswith("assert"):
            continue  # saying where the file is, showing it, a test's assertion: not read by the run
        for arg in call.args:
            if any(same(n) for n in walk(arg.value)):
                if _wait_for_chief(ctx, last, path, call):
                    return
                ctx.warn(opener, RULE, ctx.say(
                    "file {file} is written on rank 0 only and used again at line {line} "
                    "({use}(...)) by every rank, which could read it before it is complete (or an old copy): "
                    "make the other ranks wait until rank 0 has written it (a barrier after the write), or "
                    "give every rank its own copy", file=a.code(path), line=str(a.line(call)),
                    use=a.code(call.func)))
                return


def _never_runs(a: A.Analysis, node: cst.CSTNode) -> bool:
    """node sits in a function that nothing in this file names (a
    notebook's data-preparation function left uncalled), and the file is
    converted as the program itself, not as a module of a project whose
    other modules may call it: the function does not run."""
    if a.project.module_name is not None:
        return False
    for fdef in a.ancestors(node):
        if isinstance(fdef, cst.FunctionDef) and a.method_owner(fdef) is None:
            name = fdef.name.value
            if not any(fdef in a.local_functions(use) for scope in a.scopes._all_scopes
                       for use in scope.accesses.get(name, ())):
                return True
    return False


def _wait_for_chief(ctx, last: cst.CSTNode, path, reader: cst.Call) -> bool:
    """A barrier right before the statement reading the file the chief
    alone writes, so every rank reads it complete: only in eager TensorFlow
    2 (a TF1 graph would need a session to run it), and only where the
    read is a statement at module level (a notebook cell's top) after the
    one holding the write, which every rank runs once in the same order -- never in
    the guarded block itself, under an if or in a loop, where the ranks
    might not all reach it: a barrier they do not all reach never returns.
    False (nothing done) otherwise."""
    a = ctx.a
    written, read = a.statement_of(last), a.statement_of(reader)
    # the write may sit in a block of a statement at module level (``if not
    # os.path.exists(path):`` around a download): what matters is that the
    # chief has run that statement before the read, and that every rank
    # reaches the barrier, a statement at module level of its own
    while written is not None and not isinstance(a.parent(written), cst.Module):
        holder = a.statement_of(a.parent(written)) if a.parent(written) is not None else None
        written = None if isinstance(holder, (cst.FunctionDef, cst.ClassDef)) else holder
    graph = bool(ctx.patterns & {"Session", "MonitoredSession"})
    if not ctx.patterns or (graph and not ctx.patterns <= {"Session", "MonitoredSession"}) or written is None or read is None \
            or written is read or not isinstance(a.parent(read), cst.Module) or not dataflow.after(a, read, written) \
            or _in_guarded_statement(ctx, read) or read in _guarded_spans(ctx):
        return False
    done = ctx.state("rank0_io.barriers")
    if id(read) not in done:
        done.add(id(read))
        ctx.plan.insert_before(read, ctx.stmts(ctx.backend.barrier(tf1_namespace(ctx) if graph else None), comment=ctx.say(
            "{engine}: the other processes wait here until the chief has written {file}.", file=a.code(path))))
    ctx.change(reader, RULE, ctx.say("{file}, written by the chief only (line {line}), is read here by every "
                                     "process after a barrier: none reads it before it is complete",
                                     file=a.code(path), line=str(a.line(written))))
    return True


def _same_path(a: A.Analysis, path):
    """A test telling the nodes that name the file ``path`` names: the
    same string, or the same variable (bound by the same assignments)."""
    if isinstance(path, cst.SimpleString):
        text = path.evaluated_value
        return lambda n: isinstance(n, cst.SimpleString) and n is not path and n.evaluated_value == text
    if isinstance(path, cst.Name):
        origins = {id(o) for o, _ in a.assigned_values(path)}
        if not origins:
            return None
        return lambda n: isinstance(n, cst.Name) and n is not path and n.value == path.value and {
            id(o) for o, _ in a.assigned_values(n)} == origins
    return None


def _file_name(a: A.Analysis, opener: cst.Call) -> str:
    path = find_arg(opener, ("file", "name"), 0)
    return a.code(path.value) if path is not None else "(unknown)"


_EXITS = (cst.Return, cst.Break, cst.Continue, cst.Yield, cst.Await, cst.Global, cst.Nonlocal)
_DEFINITIONS = (cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom, cst.Lambda)


def _unguardable_body(a: A.Analysis, w: cst.With, inference: bool):
    """Why ``w`` cannot run on rank 0 only (a phrase), or None when it can."""
    return _unguardable_run(a, [w], inference)


def _within(a: A.Analysis, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return node is outer or any(p is outer for p in a.ancestors(node))


def _rebound_around(a: A.Analysis, use: cst.Name, w: cst.With) -> bool:
    """``use`` is in the body of a later with/for statement (not holding w)
    that binds the same name: there it means that statement's value."""
    for p in a.ancestors(use):
        if p is w:
            return False
        if isinstance(p, cst.With) and not _within(a, w, p):
            if any(item.asname is not None and isinstance(item.asname.name, cst.Name)
                   and item.asname.name.value == use.value for item in p.items) and _within(a, use, p.body):
                return True
        if isinstance(p, cst.For) and not _within(a, w, p):
            if isinstance(p.target, cst.Name) and p.target.value == use.value and _within(a, use, p.body):
                return True
    return False


@register
class Rank0Io(Rule):
    id = "rank0-io"
    description = "Checkpoints, saves, logs, summaries, images and console output from one process only, never with a collective under the rank guard."
    engines = ('horovod', 'tf-distribute')
    kinds = ('rank0-io', 'worker-writes')
    refuses = ""
    example = "keras/rank0_calls_on_one_line"
    order = 50

    def apply(self, ctx) -> None:
        apply(ctx)
