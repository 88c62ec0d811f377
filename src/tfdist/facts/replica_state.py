"""What a replication scope must hold: the statements that build models, optimizers and variables.

What engines that replicate variables need (tf.distribute's strategies):
state created in the replication scope, the user's batch kept per replica,
data split by the engine, saves written by every worker.

These are intents; the backend says how (``replica_scope``,
``per_replica_batch``, ``distribute_dataset``, ``worker_write_path``).
"""
from __future__ import annotations

import re
from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from .keras_models import unread_construction
from .syntax import calls_in, is_optimizer_step, method_name
from . import dataset_flow
from . import kinds


RULE = kinds.REPLICA_SCOPE
BATCH_RULE = kinds.PER_REPLICA_BATCH


# ------------------------------------------------------------ replica scope
@fact
def construction_statements(a: A.Analysis, expr, kinds, depth: int = 0) -> List[cst.BaseStatement]:
    """The statements that build the object(s) ``expr`` is bound to (of
    these kinds), wherever they are (a factory's ``return``, ``__init__``,
    every caller's argument for a parameter)."""
    out = []
    if isinstance(expr, cst.Name) and depth < 6:
        bound = a.assigned_values(expr)
        for origin, value in bound:
            if isinstance(origin, cst.Param):
                for _call, arg in a.argument_values(origin):
                    out += [s for s in construction_statements(a, arg, kinds, depth + 1) if s not in out]
            elif value is not None and (len(bound) > 1 or isinstance(value, cst.IfExp)):
                # several bindings reach (``if version == 2: model = resnet_v2() else: model = resnet_v1()``):
                # each one's constructions -- a type stands for its class, not for each construction
                out += [s for s in construction_statements(a, value, kinds, depth + 1) if s not in out]
    if isinstance(expr, cst.IfExp) and depth < 6:  # ``net_v2() if version == 2 else net_v1()``: both
        for branch in (expr.body, expr.orelse):
            out += [s for s in construction_statements(a, branch, kinds, depth + 1) if s not in out]
    for t in a.types(expr):
        if t.kind in kinds and t.call is not None:
            stmt = a.statement_of(t.call)
            if stmt is not None and stmt not in out:
                out.append(stmt)
            if t.kind == A.MODEL:  # a functional model: its layers are built where they are called
                for s in _layer_statements(a, t.call, set(), depth) + building_statements(a, t.call):
                    if s not in out:
                        out.append(s)
                _take_whole_loops(a, out)
                # models passed to its constructor (a GAN's generator and discriminator, built apart),
                # or added to it as layers (``model.add(g_model)``)
                added = [c.args[0].value for s in list(out) for c in calls_in(s)
                         if method_name(c) == "add" and c.args and not c.args[0].keyword] if depth < 6 else []
                for sub in [arg.value for arg in t.call.args if depth < 6] + added:
                    if sub is not expr and a.is_kind(sub, A.MODEL):
                        out += [s for s in construction_statements(a, sub, kinds, depth + 1) if s not in out]
    return out


#: Model methods that create variables after the constructor: layers added,
#: the model built. Not ``load_weights``: measured on TF 2.21 (Keras 3 and
#: tf-keras) it creates no variable, inside the scope or out (it assigns
#: the model's; tf-keras defers the optimizer's slots to their creation,
#: Keras 3 skips them), and loading outside the scope trains as well.
BUILDING_METHODS = {"add", "build", "adapt"}  # adapt(): a preprocessing layer builds its state from data


@fact
def building_statements(a: A.Analysis, construction: cst.Call) -> List[cst.BaseStatement]:
    """The statements that create a model's variables after its constructor
    ran: ``.add(layer)``, ``.build(shape)``, a call on data whose result is
    dropped (run only to build the model) -- on every
    name the constructed object is bound to, followed through assignments,
    returns and the functions it is passed to. A loop doing nothing else is
    taken whole; a call of a function of this module that builds the model
    it receives is taken as a statement when that function trains nothing,
    else its building statements are."""
    out: List[cst.BaseStatement] = []
    seen: set = set()

    def add(stmt) -> None:
        if stmt is not None and stmt not in out:
            out.append(stmt)

    def uses(value, depth: int) -> None:
        # ``value`` evaluates to the model: follow where the statement holding it binds it
        if depth > 6:
            return
        parent = a.parent(value)
        target = parent.targets[0].target if isinstance(parent, cst.Assign) and len(parent.targets) == 1 else None
        if isinstance(target, cst.Name):
            bound(target, depth)
        elif isinstance(target, cst.Attribute):
            if id(target) not in seen:
                seen.add(id(target))
                for ref in _attribute_references(a, target):
                    use(ref, depth)
        elif isinstance(parent, cst.Return):
            fdef = a.enclosing_function(parent)
            if fdef is not None and a.method_owner(fdef) is None:
                for call in a.calls:
                    if isinstance(call.func, cst.Name) and fdef in a.local_functions(call.func):
                        uses(call, depth + 1)

    def bound(target, depth: int) -> None:
        if id(target) in seen:
            return
        seen.add(id(target))
        for ref in _references(a, target):
            use(ref, depth)

    def use(ref, depth: int) -> None:
        parent = a.parent(ref)
        if isinstance(parent, cst.Attribute) and parent.value is ref:
            call = a.parent(parent)
            if parent.attr.value in BUILDING_METHODS and isinstance(call, cst.Call) and call.func is parent:
                add(_whole_loop(a, a.statement_of(call), out))
        elif isinstance(parent, cst.Call) and parent.func is ref:
            if _result_dropped(a, parent):
                add(_whole_loop(a, a.statement_of(parent), out))
        elif isinstance(parent, cst.Arg) and isinstance(a.parent(parent), cst.Call):
            passed(a.parent(parent), parent, depth)
        elif isinstance(parent, (cst.Assign, cst.Return)):
            uses(ref, depth + 1)

    def passed(call: cst.Call, arg: cst.Arg, depth: int) -> None:
        # the model handed to a function of this module that builds it
        for fdef in dataflow.callees(a, call):
            inner: List[cst.BaseStatement] = []
            for param in fdef.params.params:
                if any(c is call and v is arg.value for c, v in a.argument_values(param)):
                    before = len(out)
                    bound(param, depth + 1)
                    inner += out[before:]
                    del out[before:]
            if not inner:
                continue
            if dataflow.reaches(a, fdef.body, lambda node: _trains(a, node)):
                for s in inner:
                    add(s)
            else:
                add(_whole_loop(a, a.statement_of(call), out))

    uses(construction, 0)
    return out


def _references(a: A.Analysis, target) -> List[cst.Name]:
    """The uses of a name bound by an assignment target or a parameter."""
    if not isinstance(target, cst.Param):
        return a.scopes.references(target)
    fdef = a.enclosing_function(target)
    return [n for n in _names(fdef.body) if any(b.node is target for b in a.scopes.lookup(n))]


def _attribute_references(a: A.Analysis, target: cst.Attribute) -> List[cst.Attribute]:
    """The reads of ``self.attr`` assigned at target: ``self.attr`` in the
    methods of its class (and subclasses), ``obj.attr`` on its instances."""
    if not isinstance(target.value, cst.Name):
        return []
    owner = a.self_class(target.value)
    if owner is None:
        return []
    attr = target.attr.value
    return [n for n in a.scopes.by_type.get(cst.Attribute, ())
            if n is not target and n.attr.value == attr and not isinstance(a.parent(n), cst.AssignTarget)
            and owner in a.instance_classes(n.value)]


def _result_dropped(a: A.Analysis, call: cst.Call) -> bool:
    """``model(x)`` as a statement of its own, or assigned to a name never
    read (``_ = model(x)``): run only for what it does to the model
    (building it)."""
    parent = a.parent(call)
    if isinstance(parent, cst.Expr):
        return True
    return (isinstance(parent, cst.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name) and not a.scopes.references(parent.targets[0].target))


#: model methods that train or run the model on replicas (with the optimizer
#: steps of common.is_optimizer_step)
TRAINING_METHODS = apis.KERAS_FIT_METHODS | {"evaluate", "predict", "minimize"}


def _trains(a: A.Analysis, node) -> bool:
    return any(isinstance(n, cst.Call) and (method_name(n) in TRAINING_METHODS or is_optimizer_step(a, n))
               for n in walk(node))


def _take_whole_loops(a: A.Analysis, chosen: List[cst.BaseStatement]) -> None:
    """A loop every statement of which is chosen (``for t in range(Ty):``
    calling the layers of each output step) is chosen whole instead: one
    scope around the loop rather than one inside it."""
    for stmt in list(chosen):
        if stmt not in chosen:
            continue  # taken into a loop already
        whole = _whole_loop(a, stmt, chosen)
        if whole is not stmt:
            chosen[:] = [s for s in chosen if s is not stmt]
            if whole not in chosen:
                chosen.append(whole)


def _whole_loop(a: A.Analysis, stmt, chosen: List[cst.BaseStatement]):
    """A ``for``/``while`` loop whose body is only this statement (or
    statements chosen already) is taken whole: one scope around the loop."""
    while stmt is not None:
        block = a.parent(stmt)
        loop = a.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if not isinstance(loop, (cst.For, cst.While)) or loop.orelse is not None or block is not loop.body:
            return stmt
        if any(s is not stmt and s not in chosen for s in block.body):
            return stmt
        for s in block.body:
            if s in chosen:
                chosen.remove(s)
        stmt = loop
    return stmt


def _is_layer_call(a: A.Analysis, value) -> bool:
    """``Dense(8)(x)``, ``keras.Input(...)``, ``layers.concatenate([...])``."""
    if not isinstance(value, cst.Call):
        return False
    if isinstance(value.func, cst.Call):
        return True
    if a.is_kind(value.func, A.MODEL):
        return True  # a (sub-)model called on tensors: ``base_model(inputs, training=False)``
    if any(n.startswith(("tensorflow.keras.", "keras.", "tf_keras.")) for n in a.names(value)):
        return True
    # a layer object bound to a name, called on tensors: ``dense = Dense(4)`` ... ``dense(x)``
    return isinstance(value.func, cst.Name) and any(
        v is not None and _is_layer_call(a, v) and not isinstance(v.func, cst.Call)
        for _, v in a.assigned_values(value.func))


def _layer_statements(a: A.Analysis, node, seen: set, depth: int = 0) -> List[cst.BaseStatement]:
    """Statements building the layers (and Keras inputs) a functional model
    construction refers to, followed back through the names it uses; a
    model used as a layer (a sub-model) with everything that builds it."""
    out: List[cst.BaseStatement] = []
    for n in walk(node):
        cls = self_attribute_class(a, n) if isinstance(n, cst.Attribute) and id(n) not in seen and depth < 6 else None
        if cls is None:
            continue
        seen.add(id(n))
        if a.is_kind(n, A.MODEL):
            # a model kept in an instance attribute and called as a layer (``img = self.generator(z)``)
            out += [s for s in construction_statements(a, n, {A.MODEL}, depth + 1) if s not in out]
        elif ("attribute", id(cls), n.attr.value) not in seen:
            # a tensor kept in an instance attribute (``self.outputs = Dense(10)(x)``): every value the class gives it
            seen.add(("attribute", id(cls), n.attr.value))
            for value in a.attribute_values(cls, n.attr.value):
                _follow_binding(a, None, value, out, seen, depth)
    for n in _names(node):
        if id(n) in seen:
            continue
        seen.add(id(n))
        if depth < 6 and a.is_kind(n, A.MODEL):
            out += [s for s in construction_statements(a, n, {A.MODEL}, depth + 1) if s not in out]
        elif isinstance(a.parent(n), cst.Call) and a.parent(n).func is n and not _is_layer_call(a, a.parent(n)):
            # called on tensors, made by a function tfdist does not read (``img = generator(z)`` of
            # ``generator = build_generator()`` from another module): a sub-model, its variables made there
            out += [s for s in unread_construction(a, n) if s not in out]
        tensor = not _constructor_argument(a, n, node)
        for origin, value in a.assigned_values(n):
            _follow_binding(a, origin, value, out, seen, depth, tensor)
    return out


# values that compute a tensor from others without a layer of their own
# (``x + residual``, ``-x``, ``outputs[0]``, ``a if c else b``): the layers
# that made those others are followed through them
_TENSOR_EXPRESSIONS = (cst.BinaryOperation, cst.UnaryOperation, cst.Name, cst.Subscript, cst.IfExp, cst.Tuple,
                       cst.NamedExpr)


def _constructor_argument(a: A.Analysis, n: cst.Name, root) -> bool:
    """``n`` is an argument of a class's construction within ``root``
    (``Dense(units)``, ``Sequential([...])``: a setting, not a tensor the
    model computes from; classes by Python's naming convention)."""
    child = n
    for anc in a.ancestors(n):
        if anc is root and a.is_kind(root, A.MODEL):
            return False  # the model construction followed (``Model(inputs, outputs)``): its tensors
        if isinstance(anc, cst.Call) and child is not anc.func:
            func = anc.func.attr if isinstance(anc.func, cst.Attribute) else anc.func
            if isinstance(func, cst.Name) and func.value[:1].isupper():
                return True
        if anc is root:
            return False
        child = anc
    return False


def _follow_binding(a: A.Analysis, origin, value, out: List[cst.BaseStatement], seen: set, depth: int,
                    tensor: bool = True) -> None:
    """Add the statements building the layers behind one binding of a name
    a functional model reads: a layer's call, a function calling layers,
    a tensor expression over such values, an augmented assignment
    (``x += residual``: what ``x`` held before and ``residual``)."""
    if isinstance(origin, cst.Param) and depth < 6:
        # a layer handed to the function building the model: followed to every caller's argument
        for _call, arg in a.argument_values(origin):
            out += [s for s in _layer_statements(a, arg, seen, depth + 1) if s not in out]
        return
    if value is None and isinstance(origin, cst.Name):
        aug = a.parent(origin)
        if tensor and isinstance(aug, cst.AugAssign) and aug.target is origin:
            # ``x += residual``: the x bound before, and what is added to it (once: in a loop,
            # the binding before may be this one again)
            if id(aug) in seen:
                return
            seen.add(id(aug))
            out += [s for s in _layer_statements(a, aug.value, seen, depth) if s not in out]
            for before, earlier in a.augmented_values(origin):
                _follow_binding(a, before, earlier, out, seen, depth, tensor)
            return
        if isinstance(aug, cst.NamedExpr) and aug.target is origin:
            value = aug.value  # ``(x := layer(x))``
        else:
            value = dataflow.assigned_by(a, origin)  # s, _, c = lstm_cell(x, initial_state=[s, c])
    if value is not None and (_is_layer_call(a, value) or _calls_layers(a, value) or (
            isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and unread_construction(a, value.func))):
        stmt = a.statement_of(value)
        if stmt is not None and stmt not in out:
            out.append(stmt)
            # what builds a layer object after its constructor (``normalizer.adapt(data)``)
            out += [s for s in building_statements(a, value) if s not in out]
            out += [s for s in _layer_statements(a, value, seen, depth) if s not in out]
    elif isinstance(value, cst.List) and isinstance(origin, cst.Assign) \
            and isinstance(origin.targets[0].target, cst.Name):
        # outputs = [] ... outputs.append(head(x)) in a loop: the tensors appended are the model's
        for added in dataset_flow.appended(a, origin.targets[0].target):
            stmt = a.statement_of(added)
            if stmt is not None and stmt not in out and (
                    _is_layer_call(a, added) or _layer_statements(a, added, set(seen), depth)):
                out.append(stmt)
                out += [s for s in _layer_statements(a, added, seen, depth) if s not in out]
    elif tensor and isinstance(value, _TENSOR_EXPRESSIONS):
        out += [s for s in _layer_statements(a, value, seen, depth) if s not in out]

def _calls_layers(a: A.Analysis, value) -> bool:
    """A call of a function of this module that calls layers on the tensors
    it is given (``context = one_step_attention(a, s)``): the layers' variables
    are created when it runs, so it runs in the scope."""
    if not isinstance(value, cst.Call) or a.is_kind(value, A.MODEL):
        return False  # a model factory's call: its construction is followed into it (construction_statements)
    fdefs = dataflow.callees(a, value)
    return bool(fdefs) and any(isinstance(n, cst.Call) and _is_layer_call(a, n) for f in fdefs for n in walk(f.body))


@fact
def self_attribute_class(a: A.Analysis, expr) -> Optional[cst.ClassDef]:
    """The class whose instance attribute ``expr`` is (``self.<name>`` in one
    of its methods, ``self`` the method's first parameter), else None."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)):
        return None
    fdef = a.enclosing_function(expr)
    params = fdef.params.params if fdef is not None else ()
    if not params or params[0].name.value != expr.value.value:
        return None
    return a.method_owner(fdef)


def _names(node):
    return [n for n in walk(node) if isinstance(n, cst.Name)]


def scoped_state(ctx) -> set:
    return ctx.state("replicas.scoped")


@fact
def every_caller_scoped(a: A.Analysis, stmt, chosen: set) -> bool:
    """A statement of a function every call of which runs in a statement
    put in the scope: it runs in the scope already (a second ``with``
    would nest scopes)."""
    fdef = a.enclosing_function(stmt)
    if fdef is None:
        return False
    sites = [c for c in a.calls if fdef in dataflow.callees(a, c)]
    return bool(sites) and all(a.statement_of(c) in chosen or any(p in chosen for p in a.ancestors(c))
                               for c in sites)


@fact
def runs_user_code(a: A.Analysis, stmt) -> bool:
    """A statement calling a function or method of this module, or a Keras
    training/evaluation method: kept out of a scope it would only join to
    make the ``with`` contiguous."""
    for node in walk(stmt):
        if isinstance(node, cst.Call):
            if dataflow.callees(a, node) or method_name(node) in apis.KERAS_FIT_METHODS | {"evaluate", "predict"}:
                return True
    return False


def _enclosing_statements(a: A.Analysis, node) -> List[cst.BaseStatement]:
    out = []
    stmt = a.statement_of(node)
    while stmt is not None:
        out.append(stmt)
        parent = a.parent(stmt)
        stmt = a.statement_of(parent) if parent is not None else None
    return out


# ------------------------------------------------------------ data split
SPLIT_RULE = kinds.DATA_DIVISION

# ------------------------------------------------------------ saves
SAVE_PATH_ARGS = {  # method or function -> (keyword, position) of its path
    "save": (("filepath", "file_prefix", "export_dir"), 0),
    "save_weights": (("filepath",), 0),
    "write": (("file_prefix",), 0),
}


# ------------------------------------------------------------ helpers of other modules
def external_helper_site(ctx, dataset) -> Optional[dataset_flow.HelperSite]:
    """The one place a helper of another project module builds this
    dataset (dataset_flow.external_sites), or None."""
    sites = dataset_flow.external_sites(ctx.a, dataset)
    return sites[0] if sites is not None and len(sites) == 1 else None


@fact
def module_file(other: A.Analysis) -> str:
    name = other.project.module_name
    return (name.replace(".", "/") + ".py") if name else "another module"


def free_local_name(ctx, preferred: str) -> str:
    """A name the script does not use and this conversion has not handed out
    (``scaled_loss``, ``scaled_loss_``...)."""
    used = ctx.state("replicas.names")
    text = ctx.a.text
    name = preferred
    while name in used or re.search(r"\b" + re.escape(name) + r"\b", text):
        name += "_"
    used.add(name)
    return name
