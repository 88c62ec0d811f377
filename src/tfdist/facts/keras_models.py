"""What builds a Keras model and its optimizer, and how compile and fit are called.

Keras ``compile``/``fit``: Horovod's Keras recipe.

The optimizer (wherever it is built) gets a scaled learning rate and is
wrapped in ``DistributedOptimizer``; ``fit`` gets the broadcast and metric
averaging callbacks first, file-writing callbacks on rank 0 only, progress
output on rank 0 only, its steps divided and its data sharded.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.findings import Evidence
from ..engine.scopes import walk
from .syntax import find_arg, method_name, receiver
from . import syntax
from . import warmups


fit_position, fit_arg = syntax.fit_position, syntax.fit_arg
EVAL_VERBOSE_POS = {"evaluate": 4, "predict": 2}


def _compiled_with_optimizer(a: A.Analysis, recv) -> bool:
    """``recv.compile(optimizer=..., loss=...)`` also appears, on an object a
    binding of recv holds (``model = sm.Unet(...)`` from a library tfdist
    has no table for): a Keras model."""
    if not isinstance(recv, cst.Name):
        return False
    origins = None
    for call in a.calls:
        other = receiver(call)
        if method_name(call) != "compile" or not isinstance(other, cst.Name) \
                or not {"optimizer", "loss"} <= {arg.keyword.value for arg in call.args if arg.keyword}:
            continue
        origins = holders(a, recv) if origins is None else origins  # followed once, only when needed
        if origins & holders(a, other):
            return True
    return False


@fact
def holders(a: A.Analysis, expr, depth: int = 0) -> set:
    """ids of the bindings whose object ``expr`` may be: its name's reaching
    bindings, and, through them, what a function of this file returns
    (``model = build(); ... return model``), the element of a tuple
    unpacked (``g, d, gan = models`` with ``models = (g, d, gan)`` passed
    in), the argument a parameter is given. Two names holding one object
    share an id."""
    out: set = set()
    if not isinstance(expr, cst.Name) or depth > 8:
        return out
    for origin, value in a.assigned_values(expr):
        out.add(id(origin))
        if isinstance(origin, cst.Param):
            for _call, arg in a.argument_values(origin):
                out |= holders(a, arg, depth + 1)
            continue
        if value is None:
            elements = a.tuple_element_values(origin) if isinstance(origin, cst.Name) else []
            out |= {h for e in elements for h in holders(a, e, depth + 1)}
            continue
        if isinstance(value, cst.Name):
            out |= holders(a, value, depth + 1)
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            for fdef in _functions_called(a, value.func):
                out |= {h for r in A.returned_values(fdef) for h in holders(a, r, depth + 1)}
    return out


def _functions_called(a: A.Analysis, func, depth: int = 0) -> list:
    """The functions of this file a call of this expression may run: the
    function named, those handed in for a parameter (``model = model_func()``
    with ``train_and_test(get_classifier, ...)``), those a loop takes from a
    list written out (``for net in [feed_forward, simple_lstm]: model =
    net()``, the list possibly passed in)."""
    found: list = []
    if depth > 6:
        return found
    if isinstance(func, (cst.List, cst.Tuple)):
        for e in func.elements:
            found += [f for f in _functions_called(a, e.value, depth + 1) if f not in found]
        return found
    if not isinstance(func, cst.Name):
        return found
    found += a.local_functions(func)
    for origin, value in a.assigned_values(func):
        values = []
        if isinstance(origin, cst.Param):
            values = [arg for _call, arg in a.argument_values(origin)]
        elif value is not None:
            values = [value]
        elif isinstance(origin, cst.Name) and isinstance(a.parent(origin), cst.For) and a.parent(origin).target is origin:
            values = [a.parent(origin).iter]  # for net in networks: each of them
        for v in values:
            found += [f for f in _functions_called(a, v, depth + 1) if f not in found]
    return found


@fact
def sklearn_wrapper(a: A.Analysis, expr) -> bool:
    """A name bound to a scikit-learn wrapper of a Keras model
    (``KerasClassifier(build_fn=...)``): its own fit() passes its keywords on
    to the model's fit, so that call trains like a model's."""
    bound = a.assigned_values(expr) if isinstance(expr, cst.Name) else []
    return bool(bound) and all(isinstance(v, cst.Call) and a.is_name(v, apis.KERAS_SKLEARN_WRAPPERS) for _, v in bound)


def _built_by_tuner(a: A.Analysis, expr) -> bool:
    """A name bound to the model a Keras Tuner's hypermodel builds
    (``model = tuner.hypermodel.build(best_hps)``)."""
    bound = a.assigned_values(expr) if isinstance(expr, cst.Name) else []
    for _, value in bound:
        func = value.func if isinstance(value, cst.Call) else None
        owner = func.value if isinstance(func, cst.Attribute) else None
        if not (isinstance(owner, cst.Attribute) and (owner.attr.value, func.attr.value) in apis.KERAS_TUNER_MODEL_BUILDS
                and isinstance(owner.value, cst.Name)):
            return False
        tuners = a.assigned_values(owner.value)
        if not tuners or not all(isinstance(v, cst.Call) and a.is_name(v, apis.KERAS_TUNERS) for _, v in tuners):
            return False
    return bool(bound)


@fact
def is_model(a: A.Analysis, expr) -> bool:
    return expr is not None and (a.is_kind(expr, A.MODEL) or _compiled_with_optimizer(a, expr)
                                 or sklearn_wrapper(a, expr) or _built_by_tuner(a, expr))


@fact
def unread_construction(a: A.Analysis, model, depth: int = 0) -> list:
    """``model = sm.Unet(...)``, ``discriminator = build_discriminator()`` of
    another module: a model a library or a module tfdist does not read
    builds (known a model by its compile()), bound once by a statement of
    its own -- that statement makes its variables. A parameter, or a name
    unpacked from a tuple: the same, for what every call of its function
    passes (``train(generator, discriminator)``), or the matching element
    (``train((generator, discriminator, gan))``)."""
    bound = a.assigned_values(model) if isinstance(model, cst.Name) and depth < 4 else []
    if len(bound) == 1 and (isinstance(bound[0][0], cst.Param)
                            or bound[0][1] is None and isinstance(bound[0][0], cst.Name)):
        # a parameter, or unpacked (``generator, discriminator, gan = models``): what each binds it to
        passed = a.parameter_values(bound[0][0]) if isinstance(bound[0][0], cst.Param) \
            else a.tuple_element_values(bound[0][0])
        out = []
        for value in passed:
            stmts = unread_construction(a, value, depth + 1)
            if not stmts:
                return []
            out += [s for s in stmts if s not in out]
        return out
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Assign) or not isinstance(bound[0][1], cst.Call):
        return []
    stmt = a.statement_of(bound[0][1])
    return [stmt] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else []


@fact
def layer_of_a_model(a: A.Analysis, expr) -> bool:
    """expr is an object called on a Keras symbolic input (``img =
    generator(z)``, ``Model(z, discriminator(generator(z)))``): a Keras layer
    or model, though built where tfdist cannot see (a helper module's
    ``gan.generator(...)``), followed to that construction as
    :func:`unread_construction` follows it."""
    for stmt in unread_construction(a, expr):
        target = stmt.body[0].targets[0].target if isinstance(stmt.body[0], cst.Assign) else None
        for use in a.scopes.references(target) if isinstance(target, cst.Name) else ():
            call = a.parent(use)
            if isinstance(call, cst.Call) and call.func is use and call.args \
                    and _keras_symbolic_input(a, call.args[0].value):
                return True
    return False


def _keras_symbolic_input(a: A.Analysis, value) -> bool:
    if isinstance(value, (cst.List, cst.Tuple)):  # a model of several inputs: ``generator([z, labels])``
        return bool(value.elements) and all(_keras_symbolic_input(a, e.value) for e in value.elements)
    if isinstance(value, cst.Name):
        bound = [v for _, v in a.assigned_values(value)]
        return bool(bound) and all(isinstance(v, cst.Call) and a.is_name(v, apis.KERAS_SYMBOLIC_INPUTS) for v in bound)
    return isinstance(value, cst.Call) and a.is_name(value, apis.KERAS_SYMBOLIC_INPUTS) is not None


@fact
def model_calls(a: A.Analysis, methods) -> List[cst.Call]:
    return [c for c in a.calls if method_name(c) in methods and is_model(a, receiver(c))]


@fact
def detect(a: A.Analysis) -> List[Evidence]:
    out = []
    for call in model_calls(a, apis.KERAS_FIT_METHODS | {"train_on_batch"}):
        recv = receiver(call)
        kinds = sorted({t.name for t in a.types(recv) if t.kind == A.MODEL}) or ["compiled like a Keras model"]
        out.append(Evidence(P.KERAS, f"{a.code(call.func)}(...) on a Keras model ({', '.join(kinds)})", a.line(call)))
    return out


@fact
def override_without_optimizer(a: A.Analysis, call: cst.Call) -> bool:
    """compile() is a method of the model's class with no optimizer parameter
    (its own optimizers are scaled where its train_step applies them)."""
    methods = a.methods_called(call)
    if not methods:
        return False
    for f in methods:
        params = f.params
        if any(p.name.value == "optimizer" for p in
                                                 params.params + params.kwonly_params + params.posonly_params):
            return False
    return True


@fact
def flavor(a: A.Analysis) -> str:
    """'keras' when the file uses standalone Keras (2, or 3: the module TF_USE_LEGACY_KERAS does
    not switch), else 'tf.keras'. A file calling no Keras of its own takes the Keras of the
    project modules whose classes and functions it calls (a model made by another module's
    factory is that module's Keras)."""
    if _calls_standalone_keras(a):
        return "keras"
    if _calls_standalone_keras(a, "tensorflow.keras"):
        return "tf.keras"
    for call in a.calls:
        found = a.project_definition(call.func, cst.ClassDef) or a.project_definition(call.func)
        if found is not None and _calls_standalone_keras(found[0]):
            return "keras"
    return "tf.keras"


def _calls_standalone_keras(a: A.Analysis, root: str = "keras") -> bool:
    return any(q == root or q.startswith(root + ".") for call in a.calls for q in a.qualified(call.func))


def wrapped_optimizers(ctx) -> set:
    """Optimizers and callback lists already edited (per conversion)."""
    return ctx.state("keras_fit.wrapped")


def prepare(ctx) -> None:
    """Which Keras the file uses (the backend picks its Keras module by it);
    for every file, whatever its pattern."""
    ctx.facts["keras_flavor"] = flavor(ctx.a)


def optimizer_of_name(ctx, class_short: str) -> str:
    """The optimizer compile() builds from a name, its default rate scaled."""
    base = "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"
    lr = apis.KERAS_OPTIMIZER_DEFAULT_LR[class_short]
    rate = ctx.backend.scale_lr(repr(lr)) or repr(lr)  # None: --lr-scaling none
    return ctx.fill(f"{base}.optimizers.{class_short}(learning_rate={rate})")


def new_optimizer(ctx, class_short: str) -> str:
    inner = optimizer_of_name(ctx, class_short)
    wrapper = ctx.backend.wrap_optimizer("{inner}", keras=True)
    return inner if wrapper is None else ctx.fill(wrapper, inner=inner)


def lr_done_state(ctx) -> str:
    return {"linear": "learning rate scaled",
            "sqrt": "learning rate scaled by the square root of the number of processes (--lr-scaling sqrt)",
            }.get(ctx.backend.lr_scaling, "learning rate kept as written (--lr-scaling none)") + warmups.phrase(ctx)


@fact
def mapping_unpackings(a: A.Analysis, call: cst.Call) -> List[cst.Call]:
    """The calls unpacking the same named ``**mapping`` (the same binding) as call."""
    star = next((arg.value for arg in call.args if arg.star == "**" and isinstance(arg.value, cst.Name)), None)
    if star is None:
        return [call]
    origins = {id(o) for o, _ in a.assigned_values(star)}
    return [c for c in a.calls if any(
        arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value == star.value
        and {id(o) for o, _ in a.assigned_values(arg.value)} & origins for arg in c.args)]


@fact
def may_be_built_here(a: A.Analysis, value, depth: int = 0, seen=None) -> bool:
    """Can ``value`` be an optimizer constructed in this file (a call the
    rules scale where it is built; ``Adam.from_config(c)`` is not)? Through the
    names it reads (their bindings, a parameter's arguments, a container's
    elements) and the local functions it calls (their returns)."""
    seen = set() if seen is None else seen
    if value is None or depth > 8 or id(value) in seen:
        return False
    seen.add(id(value))
    fields = set()  # nodes inside a field of plain data (config.optimizer): a name, whatever holds it
    for node in walk(value):
        if id(node) in fields:
            continue
        if isinstance(node, cst.Attribute) and not isinstance(a.parent(node), cst.Call) \
                and not a.is_import_binding(node) and not _object_attribute(a, node):
            fields.update(id(n) for n in walk(node))
            continue
        if isinstance(node, cst.Attribute) and _object_attribute(a, node) and not (
                isinstance(a.parent(node), cst.Call) and a.parent(node).func is node
                and a.is_name(a.parent(node), apis.PLAIN_DATA_CALLS)):
            return True  # model.optimizer: an optimizer of this file, maybe scaled already
        if isinstance(node, cst.Call):
            if any(t.kind in OPTIMIZER_KINDS and t.call is node for t in a.types(node)):
                return True  # a construction: the rule scales it where it is built
            if _from_unseen_config(a, node):
                return True  # a configuration saved from an optimizer of this file carries its scaled rate
            if isinstance(node.func, cst.Name):
                for fdef in a.local_functions(node.func):
                    if any(may_be_built_here(a, r, depth + 1, seen) for r in A.returned_values(fdef)):
                        return True
        elif isinstance(node, cst.Name) and _read(a, node):
            for origin, bound in a.assigned_values(node):
                if origin is None:
                    continue  # a built-in (True, len)
                if bound is not None:
                    sources = [bound]
                elif isinstance(origin, cst.Param):
                    sources = list(_param_values(a, origin) or ()) + [origin.default]
                else:
                    sources = _binding_sources(a, origin)
                    if sources is None:
                        return True  # bound some other way: it may be
                if any(may_be_built_here(a, v, depth + 1, seen) for v in sources):
                    return True
    return False


def _object_attribute(a: A.Analysis, attr: cst.Attribute) -> bool:
    """``x.y`` reads an attribute of an object (``model.optimizer``), not a
    name of a module or class (``tf.keras.optimizers``) nor a field of
    plain data (``args.optimizer`` of ``parser.parse_args()``,
    ``config.optimizer`` of a tracker's config: :func:`_plain_data`)."""
    if a.is_import_binding(attr):
        return False
    root = attr
    while isinstance(root, cst.Attribute):
        root = root.value
    if a.names(root) & apis.PLAIN_DATA_OBJECTS or _plain_data(a, root):
        return False
    bound = a.assigned_values(root) if isinstance(root, cst.Name) else []
    return not bound or not all(_plain_data(a, v) for _, v in bound)


def _plain_data(a: A.Analysis, value) -> bool:
    """A value holding plain settings: ``parser.parse_args()``,
    ``wandb.config``, ``run.config`` of ``run = wandb.init()``
    (apis.PLAIN_DATA_CALLS, PLAIN_DATA_OBJECTS, PLAIN_DATA_RESULT_ATTRIBUTES)."""
    if isinstance(value, cst.Call):
        return a.is_name(value, apis.PLAIN_DATA_CALLS) is not None
    if not isinstance(value, (cst.Attribute, cst.Name)):
        return False
    if a.names(value) & apis.PLAIN_DATA_OBJECTS:
        return True
    if not isinstance(value, cst.Attribute):
        return False
    owner = value.value
    calls = [owner] if isinstance(owner, cst.Call) else [
        v for _, v in (a.assigned_values(owner) if isinstance(owner, cst.Name) else [])]
    names = [a.is_name(c, apis.PLAIN_DATA_RESULT_ATTRIBUTES) if isinstance(c, cst.Call) else None for c in calls]
    return bool(names) and all(n is not None and apis.PLAIN_DATA_RESULT_ATTRIBUTES[n] == value.attr.value
                               for n in names)


def _from_unseen_config(a: A.Analysis, call: cst.Call) -> bool:
    """An optimizer rebuilt from a configuration (``Adam.from_config(c)``,
    ``optimizers.deserialize(c)``, ``optimizers.get(c)``) that is not written
    here as a literal: it may be a saved optimizer's, whose rate the
    conversion scaled already."""
    if not (method_name(call) == "from_config" or a.is_name(call, apis.OPTIMIZER_FROM_CONFIG)):
        return False
    config = call.args[0].value if call.args else None

    def literal(v):
        return isinstance(v, (cst.Dict, cst.SimpleString))

    if literal(config):
        return False
    if isinstance(config, cst.Name):
        bound = a.assigned_values(config)
        return not bound or not all(literal(v) for _, v in bound)
    return True


def _read(a: A.Analysis, name: cst.Name) -> bool:
    """``name`` is read as a value (not an argument's keyword, not the
    attribute of ``x.name``)."""
    parent = a.parent(name)
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    return not (isinstance(parent, cst.Attribute) and parent.attr is name)


def _binding_sources(a: A.Analysis, target: cst.CSTNode):
    """The expressions a name bound other than by ``name = value`` takes its
    value from: a loop's iterable, the value of a tuple assignment, a
    with-item, a walrus; [] for an import or a definition; None otherwise."""
    if isinstance(target, (cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef)):
        return []
    for node in a.ancestors(target):
        if isinstance(node, (cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef)):
            return []
        if isinstance(node, (cst.For, cst.CompFor)):
            return [node.iter]
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.NamedExpr)):
            return [node.value]
        if isinstance(node, cst.WithItem):
            return [node.item]
        if isinstance(node, cst.BaseStatement):
            break
    return None


OPTIMIZER_KINDS = (A.KERAS_OPTIMIZER, A.TF1_OPTIMIZER)


@fact
def optimizer_constructions(a: A.Analysis, value, depth: int):
    """[(call, type)] of every optimizer construction value can be -- through
    a function of this module returning one (``get_optimizer()``), names,
    and parameters (``optimizer=None`` filled by the callers or by a later
    ``optimizer = get_optimizer()``) -- or None when any origin is unknown.
    A ``None`` value is skipped: compile() cannot take one."""
    if depth > 8 or value is None:
        return None
    if isinstance(value, cst.Name) and value.value == "None":
        return []
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
        elements = _container_elements(a, value.value)
        return _all_constructions(a, elements, depth) if elements else None
    if isinstance(value, NamedOptimizer):
        return [(value.string, A.Type(A.KERAS_OPTIMIZER, f"keras.optimizers.{value.short}", value.string))]
    if isinstance(value, cst.Call):
        ts = [t for t in a.types(value) if t.kind in OPTIMIZER_KINDS and t.call is value]
        if ts:
            return [(value, ts[0])]
        wrapper = a.is_name(value, apis.KERAS_OPTIMIZER_WRAPPERS)
        if wrapper is not None:  # LossScaleOptimizer(opt): the wrapped optimizer's construction
            inner = find_arg(value, *apis.KERAS_OPTIMIZER_WRAPPERS[wrapper])
            return optimizer_constructions(a, inner.value, depth + 1) if inner is not None else None
        if not isinstance(value.func, cst.Name):
            return None
        fdefs = a.local_functions(value.func)
        if len(fdefs) != 1:
            return None
        returns = A.returned_values(fdefs[0])
        return _all_constructions(a, returns, depth) if returns else None
    if isinstance(value, cst.Name):
        values = []
        for origin, bound in a.assigned_values(value):
            named = _named_optimizer(a, origin, bound, value)
            if named is not None:
                values.append(named)
            elif bound is not None:
                values.append(bound)
            elif isinstance(origin, cst.Param):
                passed = _param_values(a, origin)
                if passed is None:
                    return None
                values += passed
            elif a.tuple_element_values(origin):
                # opt in ``for layers, opt in ((lower, opt_a), (upper, opt_b)):``, ``a, b = x, y``
                values += a.tuple_element_values(origin)
            else:
                return None
        return _all_constructions(a, values, depth)
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
        # self.optimizer: what the class's methods assign to it
        klass = a.self_class(value.value)
        values = a.attribute_values(klass, value.attr.value) if klass is not None else []
        return _all_constructions(a, values, depth) if values else None
    return None


@dataclass(frozen=True)
class NamedOptimizer:
    """An optimizer's name bound to a variable that compile() alone reads
    (``optimizer = "adam"`` in one branch, an optimizer object in another):
    the conversion builds it there, as compile() would from the name."""
    string: cst.SimpleString
    short: str


def _named_optimizer(a: A.Analysis, origin, bound, read: cst.Name) -> Optional[NamedOptimizer]:
    """The binding ``origin = bound`` as a NamedOptimizer, when ``bound`` is
    a known optimizer's name and ``read`` (compile()'s argument) is the only
    read it reaches: an object there changes nothing else (a name printed or
    compared elsewhere stays a name)."""
    if not isinstance(bound, cst.SimpleString) or not isinstance(origin, cst.Assign) or len(origin.targets) != 1 \
            or not isinstance(origin.targets[0].target, cst.Name) or origin.value is not bound:
        return None
    short = apis.KERAS_OPTIMIZER_STRINGS.get(str(ast.literal_eval(bound.value)).lower())
    if short is None:
        return None
    reads = a.scopes.references(origin.targets[0].target)
    return NamedOptimizer(bound, short) if reads and all(r is read for r in reads) else None


def _all_constructions(a: A.Analysis, values, depth: int):
    out = []
    for v in values:
        sub = optimizer_constructions(a, v, depth + 1)
        if sub is None:
            return None
        out += [c for c in sub if c not in out]
    return out


#: Reads of a dict, list or tuple that leave its elements as they are.
READ_ONLY_CONTAINER_METHODS = frozenset({"items", "keys", "values", "get", "index", "count", "copy"})


def _container_elements(a: A.Analysis, name: cst.Name):
    """The element values of the dict, list or tuple literal ``name`` is
    bound to (``optimizers = {"sgd": SGD(), "adam": Adam()}``), when every
    binding reaching it is such a literal and no read of it can change an
    element (an item assignment, a mutating method, passing it to a call);
    None otherwise."""
    bound = a.assigned_values(name)
    if not bound or any(not isinstance(v, (cst.Dict, cst.List, cst.Tuple)) for _, v in bound):
        return None
    elements = []
    for _, literal in bound:
        for read in a.reads_bound_to(name.value, literal):
            if not _reads_only(a, read):
                return None
        for element in literal.elements:
            if isinstance(element, (cst.StarredElement, cst.StarredDictElement)):
                return None
            elements.append(element.value)
    return elements


def _reads_only(a: A.Analysis, read: cst.Name) -> bool:
    """``read`` (a use of a container) cannot change its elements."""
    parent = a.parent(read)
    if isinstance(parent, cst.Subscript) and parent.value is read:
        return not isinstance(a.parent(parent), (cst.AssignTarget, cst.AugAssign, cst.Del, cst.AnnAssign))
    if isinstance(parent, cst.Attribute) and parent.value is read:
        return parent.attr.value in READ_ONLY_CONTAINER_METHODS
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is read:
        return True
    if isinstance(parent, cst.Arg) and isinstance(a.parent(parent), cst.Call):
        return a.is_name(a.parent(parent).func, apis.READ_ONLY_BUILTINS) is not None
    return isinstance(parent, cst.ComparisonTarget)


def _param_values(a: A.Analysis, param: cst.Param):
    """The values a parameter of a module-level-named function takes: the
    arguments of every call of it in this module, its default where a call
    leaves it out; None if the function is used other than by direct calls."""
    fdef = a.enclosing_function(param)
    if fdef is None or a.method_owner(fdef) is not None or param not in fdef.params.params:
        return None
    index = list(fdef.params.params).index(param)
    name = param.name.value
    uses = [use for scope in a.scopes._all_scopes for use in scope.accesses.get(fdef.name.value, ())
            if fdef in a.local_functions(use)]
    out = []
    for use in uses:
        call = a.parent(use)
        if not isinstance(call, cst.Call) or call.func is not use or any(arg.star for arg in call.args):
            return None
        arg = find_arg(call, name, index)
        if arg is not None:
            out.append(arg.value)
        elif param.default is not None:
            out.append(param.default)
        else:
            return None
    return out


@fact
def bound_optimizer_construction(a: A.Analysis, value):
    """(call, type) when value is (bound once to) an optimizer construction."""
    if isinstance(value, cst.Call):
        ts = [t for t in a.types(value) if t.kind in OPTIMIZER_KINDS and t.call is value]
        return (value, ts[0]) if ts else None
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if len(bound) == 1 and isinstance(bound[0][1], cst.Call):
            return bound_optimizer_construction(a, bound[0][1])
    return None
