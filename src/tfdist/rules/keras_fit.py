"""Keras ``compile``/``fit``: Horovod's Keras recipe.

The optimizer (wherever it is built) gets a scaled learning rate and is
wrapped in ``DistributedOptimizer``; ``fit`` gets the broadcast and metric
averaging callbacks first, file-writing callbacks on rank 0 only, progress
output on rank 0 only, its steps divided and its data sharded.
"""
from __future__ import annotations

from . import kinds

import ast
from dataclasses import dataclass
from typing import List, Optional, Tuple

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.findings import Evidence
from . import data_division, dataset_flow, endless_inputs, keras_inputs, lr_scaling, samplers, step_loops, warmup
from ..engine.scopes import walk
from . import common
from .common import (append_arg, find_arg, find_passed, keyword_free, kwarg, method_name, prepend_elements,
                     receiver, source)

PATTERN = P.KERAS
RULE = kinds.KERAS

# Positions of fit()'s arguments (Keras 2 signature), for positional calls.
FIT_POS = apis.KERAS_FIT_POSITIONS

fit_position, fit_arg = common.fit_position, common.fit_arg
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


def is_model(a: A.Analysis, expr) -> bool:
    return expr is not None and (a.is_kind(expr, A.MODEL) or _compiled_with_optimizer(a, expr)
                                 or sklearn_wrapper(a, expr) or _built_by_tuner(a, expr))


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
    if isinstance(value, cst.Name):
        bound = [v for _, v in a.assigned_values(value)]
        return bool(bound) and all(isinstance(v, cst.Call) and a.is_name(v, apis.KERAS_SYMBOLIC_INPUTS) for v in bound)
    return isinstance(value, cst.Call) and a.is_name(value, apis.KERAS_SYMBOLIC_INPUTS) is not None


def model_calls(a: A.Analysis, methods) -> List[cst.Call]:
    return [c for c in a.calls if method_name(c) in methods and is_model(a, receiver(c))]


def detect(a: A.Analysis) -> List[Evidence]:
    out = []
    for call in model_calls(a, apis.KERAS_FIT_METHODS | {"train_on_batch"}):
        recv = receiver(call)
        kinds = sorted({t.name for t in a.types(recv) if t.kind == A.MODEL}) or ["compiled like a Keras model"]
        out.append(Evidence(P.KERAS, f"{a.code(call.func)}(...) on a Keras model ({', '.join(kinds)})", a.line(call)))
    return out


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


def flavor(a: A.Analysis) -> str:
    """'keras' when the file uses standalone Keras 2, else 'tf.keras'."""
    for call in a.calls:
        for q in a.qualified(call.func):
            if q == "keras" or q.startswith("keras."):
                return "keras"
    return "tf.keras"


def _wrapped(ctx) -> set:
    """Optimizers and callback lists already edited (per conversion)."""
    return ctx.state(__name__ + ".wrapped")


def prepare(ctx) -> None:
    """Which Keras the file uses (the backend picks its Keras module by it);
    for every file, whatever its pattern."""
    ctx.facts["keras_flavor"] = flavor(ctx.a)


def apply(ctx) -> None:
    a = ctx.a
    # A custom train_step computes its own gradients: the optimizer wrapper
    # would not see them (Horovod averages in compute_gradients), the tape must.
    from . import gradient_tape, train_on_batch
    stepped = train_on_batch.calls(a)
    if stepped:
        # the broadcast after a model's first train_on_batch is horovod.tensorflow's broadcast_variables
        ctx.facts["needs_tf_api"] = True
    custom = gradient_tape.training_tapes(a, keras_train_step=True)
    if custom:
        ctx.facts["needs_tf_api"] = True
        for w, item, name, calls in custom:
            gradient_tape.wrap_tape(ctx, w, item, name, calls)
    compiles = model_calls(a, {"compile"})
    for call in compiles:
        if find_passed(a, call, "optimizer", 0) is None and override_without_optimizer(a, call):
            continue  # an overridden compile(d_optimizer=..., g_optimizer=...): scaled where the step applies them
        _optimizer(ctx, call)
    for p in gradient_tape.apply_calls(a):
        r = receiver(p)
        if gradient_tape.in_keras_train_step(a, p) and not (
                isinstance(r, cst.Attribute) and r.attr.value == "optimizer" and isinstance(r.value, cst.Name)
                and a.self_class(r.value) is not None):  # self.optimizer: compile()'s, scaled there
            gradient_tape._scale(ctx, r)
    for call in model_calls(a, apis.KERAS_FIT_METHODS):
        _fit(ctx, call)
    lr_scaling.scale_epoch_schedulers(ctx)
    if stepped:
        train_on_batch.apply_horovod(ctx, stepped)
    for method, pos in EVAL_VERBOSE_POS.items():
        for call in model_calls(a, {method}):
            _rank0_verbose(ctx, call, pos, default="1")


# ------------------------------------------------------------------ optimizer
def _wrap(ctx, node: cst.BaseExpression, what: str, scaled: str = None) -> None:
    """Wrap the optimizer ``node`` for the engine; ``scaled``: a call
    template over ``{inner}`` scaling its learning rate at run time, put
    inside the wrapper (Horovod rebuilds the optimizer from its config)."""
    if node in _wrapped(ctx):
        return
    _wrapped(ctx).add(node)
    template = ctx.backend.wrap_optimizer("{inner}", keras=True)
    if template is not None:
        ctx.change(node, "distributed-optimizer", ctx.say("{what} wrapped in {optimizer_wrapper} (gradients averaged across ranks)", what=what))
    if scaled is not None:
        template = scaled if template is None else ctx.fill(template, inner=scaled)
    if template is None:
        return  # the engine averages gradients without a wrapper
    # filled now, so that the setup imports the module the template names
    template = ctx.fill(template, inner="{inner}")
    ctx.plan.replace(node, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))


def _optimizer_of_name(ctx, class_short: str) -> str:
    """The optimizer compile() builds from a name, its default rate scaled."""
    base = "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"
    lr = apis.KERAS_OPTIMIZER_DEFAULT_LR[class_short]
    rate = ctx.backend.scale_lr(repr(lr)) or repr(lr)  # None: --lr-scaling none
    return ctx.fill(f"{base}.optimizers.{class_short}(learning_rate={rate})")


def _new_optimizer(ctx, class_short: str) -> str:
    inner = _optimizer_of_name(ctx, class_short)
    wrapper = ctx.backend.wrap_optimizer("{inner}", keras=True)
    return inner if wrapper is None else ctx.fill(wrapper, inner=inner)


def _build_named(ctx, string: cst.SimpleString, short: str) -> None:
    """``optimizer = "adam"`` read by compile() alone, beside other
    bindings that are optimizer objects: the object compile() would build
    from the name, built there (its rate scaled), so that compile() wraps
    whichever binding reaches it."""
    new = ctx.expr(_optimizer_of_name(ctx, short))
    ctx.plan.replace(string, lambda old: new)
    ctx.change(string, "distributed-optimizer", ctx.say(
        "optimizer {name} built as {short} here, with its default {lr_done} (compile() gets it, or another binding)",
        name=string.value, short=short, lr_done=_lr_done(ctx)))


def _lr_done(ctx) -> str:
    return {"linear": "learning rate scaled",
            "sqrt": "learning rate scaled by the square root of the number of processes (--lr-scaling sqrt)",
            }.get(ctx.backend.lr_scaling, "learning rate kept as written (--lr-scaling none)") + warmup.phrase(ctx)


def _mapping_unpackings(a: A.Analysis, call: cst.Call) -> List[cst.Call]:
    """The calls unpacking the same named ``**mapping`` (the same binding) as call."""
    star = next((arg.value for arg in call.args if arg.star == "**" and isinstance(arg.value, cst.Name)), None)
    if star is None:
        return [call]
    origins = {id(o) for o, _ in a.assigned_values(star)}
    return [c for c in a.calls if any(
        arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value == star.value
        and {id(o) for o, _ in a.assigned_values(arg.value)} & origins for arg in c.args)]


def _optimizer(ctx, compile_call: cst.Call) -> None:
    a = ctx.a
    arg = find_passed(a, compile_call, "optimizer", 0)
    if arg is None:
        short = apis.KERAS_OPTIMIZER_STRINGS[apis.KERAS_DEFAULT_COMPILE_OPTIMIZER]
        if not keyword_free(ctx, compile_call, "optimizer", _new_optimizer(ctx, short), "distributed-optimizer"):
            return
        new = cst.parse_expression(_new_optimizer(ctx, short))
        ctx.plan.replace(compile_call, lambda c: append_arg(c, kwarg("optimizer", new)))
        ctx.change(compile_call, "distributed-optimizer", ctx.say("default optimizer made explicit ({short}), {lr_done}, wrapped in {optimizer_wrapper}", short=short, lr_done=_lr_done(ctx)))
        return
    if arg not in compile_call.args and not isinstance(arg.value, cst.Name):
        # an optimizer written in a dict of settings: made once, where the dict
        # is; several compile(**settings) would share one optimizer object
        unpacked = _mapping_unpackings(a, compile_call)
        if len(unpacked) > 1:
            ctx.warn(arg.value, "distributed-optimizer", f"the optimizer {a.code(arg.value)} written in a dict of "
                     f"settings is unpacked by {len(unpacked)} calls (lines {', '.join(str(a.line(c)) for c in unpacked)}): "
                     "converted there, one optimizer object would serve every model; give each compile() its own "
                     "optimizer (optimizer=... beside the **settings), then convert again")
            return
    value = arg.value
    if isinstance(value, cst.SimpleString):
        ident = str(ast.literal_eval(value.value)).lower()
        short = apis.KERAS_OPTIMIZER_STRINGS.get(ident)
        if short is None:
            raise ctx.unsupported(value, f"unknown optimizer name {value.value}")
        new = cst.parse_expression(_new_optimizer(ctx, short))
        ctx.plan.replace(value, lambda old: new)
        ctx.change(value, "distributed-optimizer", ctx.say("optimizer {name} built as {short} with its default {lr_done}, wrapped in {optimizer_wrapper}", name=value.value, short=short, lr_done=_lr_done(ctx)))
        return
    construction = _construction(a, value)
    if construction is not None:
        call, type_ = construction
        if type_.kind == A.TF1_OPTIMIZER:
            raise _tf1_optimizer(ctx, call)
        lr_scaling.scale_optimizer_lr(ctx, call, type_.name)
        warmup.note_fit_optimizer(ctx, call)
        _wrap(ctx, call, f"optimizer {a.code(call.func)}")
        return
    found = _constructions(a, value, 0)
    if found:
        for call, type_ in found:
            if type_.kind == A.TF1_OPTIMIZER:
                raise _tf1_optimizer(ctx, call)
        for call, type_ in found:
            if isinstance(call, cst.SimpleString):
                _build_named(ctx, call, type_.name.rsplit(".", 1)[1])
                continue
            lr_scaling.scale_optimizer_lr(ctx, call, type_.name)
            warmup.note_fit_optimizer(ctx, call)
        _wrap(ctx, value, f"optimizer {a.code(value)} (built by {', '.join(sorted({a.code(getattr(c, 'func', c)) for c, _ in found}))})")
        return
    if found == []:  # every value it can have is None
        said = "optimizer=None:" if a.code(value) == "None" else f"optimizer={a.code(value)} is always None here:"
        ctx.warn(value, "distributed-optimizer", f"{said} compile() gets no optimizer, so fit() fails as written "
                 f"(a blank left to fill in?); put the optimizer there and convert again")
        return
    _unseen_optimizer(ctx, value)


def _unseen_optimizer(ctx, value: cst.BaseExpression) -> None:
    """An optimizer built where the converter cannot see (another module, a
    tuner's choice, a name string in a variable): its learning rate is
    scaled when compile() runs, on the object itself, once. Not when one of
    the optimizers built in this file may be it (scaled where it is built,
    it would be scaled twice), nor under a warmup (which ramps the rate it
    finds when training starts)."""
    a = ctx.a
    what = f"optimizer {a.code(value)}"
    if ctx.backend.lr_scaling == "none":
        _wrap(ctx, value, what)
        return
    scaled = None
    maybe_scaled = _may_be_built_here(a, value)
    if not ctx.backend.warmup_epochs and not maybe_scaled:
        scaled = lr_scaling.scale_at_run_time(ctx, value, warmup.keras_module(ctx))
    _wrap(ctx, value, what, scaled)
    if scaled is None and maybe_scaled:
        ctx.warn(value, "lr-scaling", f"cannot tell where {a.code(value)} is built: it may be an optimizer this file "
                                      f"builds, or rebuilds from one's saved configuration (its rate then scaled "
                                      f"already), or another: make sure its learning rate is multiplied by the "
                                      f"number of processes once")
    elif scaled is None:
        ctx.warn(value, "lr-scaling", f"where {a.code(value)} is created is unknown: multiply its learning rate by the number of processes by hand")


def _may_be_built_here(a: A.Analysis, value, depth: int = 0, seen=None) -> bool:
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
                    if any(_may_be_built_here(a, r, depth + 1, seen) for r in A.returned_values(fdef)):
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
                if any(_may_be_built_here(a, v, depth + 1, seen) for v in sources):
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


def _tf1_optimizer(ctx, call: cst.Call):
    a = ctx.a
    names = sorted(n for n in a.names(call) if n in apis.TF1_OPTIMIZERS)
    short = names[0].rsplit(".", 1)[1] if names else a.code(call.func)
    return ctx.unsupported(call, ctx.say(
        "the TF1 optimizer {optimizer}(...) given to Keras compile(): {tf1_optimizer_in_keras}; use the Keras "
        "optimizer instead (tf.keras.optimizers.{keras_optimizer}(...) with the same learning rate)",
        optimizer=a.code(call.func), keras_optimizer=short.replace('Optimizer', '') or short))


def _constructions(a: A.Analysis, value, depth: int):
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
            return _constructions(a, inner.value, depth + 1) if inner is not None else None
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
        sub = _constructions(a, v, depth + 1)
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


def _construction(a: A.Analysis, value):
    """(call, type) when value is (bound once to) an optimizer construction."""
    if isinstance(value, cst.Call):
        ts = [t for t in a.types(value) if t.kind in OPTIMIZER_KINDS and t.call is value]
        return (value, ts[0]) if ts else None
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        if len(bound) == 1 and isinstance(bound[0][1], cst.Call):
            return _construction(a, bound[0][1])
    return None


# ------------------------------------------------------------------------ fit
def _fit(ctx, call: cst.Call) -> None:
    a = ctx.a
    _callbacks(ctx, call)
    _rank0_verbose(ctx, call, fit_position(call, "verbose"), default="1")
    x = fit_arg(call, "x")
    y = fit_arg(call, "y")
    steps = fit_arg(call, "steps_per_epoch")
    val = fit_arg(call, "validation_data")
    # Each flow is divided exactly once: its data is sharded (a steps count
    # taken from the sharded data is per rank already), or -- for inputs that
    # cannot be split -- every rank reads its own stream and the steps are
    # divided. A count computed from the full data set is always divided.
    per_rank = {}  # "steps_per_epoch"/"validation_steps" -> names of sharded data
    if x is None:
        ctx.warn(call, data_division.RULE, "fit() without input data: divide the input across ranks by hand")
    else:
        flow = keras_inputs.shard_image_flow(ctx, x.value, "training data")
        if flow == "sliced":
            per_rank["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
        elif flow == "streams":
            if steps is None:
                _add_steps(ctx, call, x.value, "steps_per_epoch")
        elif a.is_kind(x.value, A.DATASET):
            if not data_division.shard_dataset(ctx, x.value, "training data") and not (
                    steps is not None and endless_inputs.shard_repeated(ctx, x.value, "training data")):
                ctx.warn(x.value, data_division.RULE, ctx.say("cannot find where this dataset is built: shard it with .shard({size}, {rank})"))
            data_division.divide_steps_taken(ctx, x.value)
            per_rank["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
        elif y is None and (a.is_kind(x.value, A.SEQUENCE) or keras_inputs.external_sequence(a, x.value)):
            keras_inputs.wrap_sequence(ctx, call, x.value, "training data")
        elif y is not None:
            values = [x.value, y.value]
            sw = fit_arg(call, "sample_weight")
            if sw is not None:
                values.append(sw.value)
            data_division.shard_arrays(ctx, values, "training data")
        elif dataset_flow.numpy_array(a, x.value):
            # inputs only (an autoencoder's train_step reads x alone): sliced like any array
            data_division.shard_arrays(ctx, [x.value], "training data")
        elif data_division.shard_dataset(ctx, x.value, "training data"):
            per_rank["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
        elif steps is not None and endless_inputs.shard_repeated(ctx, x.value, "training data"):
            pass  # endless: steps_per_epoch (divided below) bounds every rank's steps
        elif steps is not None and samplers.random_generator(a, x.value) is not None:
            # a generator drawing random batches from NumPy's global generator:
            # one stream per rank; steps_per_epoch (divided below) bounds the steps
            samplers.seed_numpy_before(ctx, a.statement_of(call))
            ctx.change(x.value, data_division.RULE,
                       f"{a.code(x.value)} draws a different stream of batches on each rank (NumPy re-seeded by "
                       f"rank before fit); each rank runs 1/size of steps_per_epoch")
        elif samplers.generator_call(a, x.value) is not None and _share_generator(
                ctx, x.value, "training data", "steps_per_epoch" if steps is not None else None):
            pass  # each rank keeps every size-th batch; steps_per_epoch (divided below), if given, bounds its steps
        elif steps is not None and not keras_inputs.unbound_parameter_note(a, x.value):
            ctx.warn(x.value, data_division.RULE, "every rank reads this input from the start: make it yield a different 1/size share per rank")
        else:
            ctx.warn(x.value, data_division.RULE, f"cannot tell what {a.code(x.value)} is"
                     f"{keras_inputs.unbound_parameter_note(a, x.value)}: divide the input across ranks by hand")
    if val is not None:
        v = val.value
        flow = keras_inputs.shard_image_flow(ctx, v, "validation data")
        if flow == "sliced":
            per_rank["validation_steps"] = keras_inputs.data_names(a, v)
        elif flow == "streams":
            if fit_arg(call, "validation_steps") is None:
                _add_steps(ctx, call, v, "validation_steps")
        elif a.is_kind(v, A.DATASET):
            data_division.shard_dataset(ctx, v, "validation data")
            per_rank["validation_steps"] = keras_inputs.data_names(a, v)
        elif isinstance(v, cst.Tuple) and 2 <= len(v.elements) <= 3 and all(
                dataset_flow.array_leaves(e.value, a) is not None for e in v.elements):
            # (x_val, y_val[, sample_weight]): each may be several inputs / outputs
            data_division.shard_arrays(ctx, [e.value for e in v.elements], "validation data")
        elif a.is_kind(v, A.SEQUENCE) or keras_inputs.external_sequence(a, v):
            keras_inputs.wrap_sequence(ctx, call, v, "validation data")
        elif fit_arg(call, "validation_steps") is not None and samplers.generator_call(a, v) is not None \
                and _share_generator(ctx, v, "validation data", "validation_steps"):
            pass  # validation_steps (divided below) bounds each rank's share
        elif data_division.shard_dataset(ctx, v, "validation data"):
            per_rank["validation_steps"] = keras_inputs.data_names(a, v)
    for key in ("steps_per_epoch", "validation_steps"):
        arg = fit_arg(call, key)
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            if key in per_rank and keras_inputs.counts_sharded_data(ctx, arg.value, per_rank[key]):
                continue  # counted on the sharded data: already per rank
            data_division.divide(ctx, arg.value, key)


def _share_generator(ctx, x, what: str, steps_key: Optional[str]) -> bool:
    """fit() on a generator of this module that yields the same batches on
    every rank: each rank keeps every size-th batch, in whole rounds (the
    engine's share of a stream), so the ranks' batches are disjoint."""
    a = ctx.a
    runs = f"each runs 1/size of {steps_key}" if steps_key else "each runs 1/size of the steps, the same number"
    # every rank must make the same order for its every size-th batch to be a share of it
    alike = samplers.seed_generator_order_alike(ctx, x, "rank", "{engine}: every rank makes the same random order, "
                                                "so the shares each rank keeps of it are disjoint.")
    return step_loops.take_rank_share(ctx, x, f"{what}: {a.code(x)} is a generator of {samplers.generator_home(a, x)}, "
                                              f"read whole on every rank: each rank keeps every size-th of its batches, "
                                              f"in whole rounds; {runs}{alike}")


def _add_steps(ctx, call: cst.Call, flow, key: str) -> None:
    """A file-reading flow (one shuffled stream per rank) with no step count:
    every rank runs len(flow) // size steps."""
    if not isinstance(flow, cst.Name):
        ctx.warn(flow, data_division.RULE, ctx.say("each rank reads its own shuffled stream from this flow: pass {key}=len(flow) // {size} (bind the flow to a name first)", key=key))
        return
    count = ctx.fill(ctx.backend.divide_count(f"len({flow.value})"))
    if not keyword_free(ctx, call, key, count, data_division.RULE):
        return
    new = ctx.expr(count)
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg(key, new)))
    ctx.change(call, data_division.RULE, f"{key}=len({flow.value}) // size: each rank reads its own shuffled stream from {flow.value}, 1/size of its batches")


def _rank0_verbose(ctx, call: cst.Call, position: int, default: str) -> None:
    arg = find_passed(ctx.a, call, "verbose", position)
    chief = ctx.backend.is_chief()
    if arg is None:
        if not keyword_free(ctx, call, "verbose", ctx.fill(f"{default} if {chief} else 0"), "rank0-output"):
            return
        new = ctx.expr(f"{default} if {chief} else 0")
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("verbose", new)))
    elif isinstance(arg.value, cst.Integer) and arg.value.value == "0":
        return  # silent already
    else:
        new = ctx.expr(f"{{v}} if {chief} else 0", v=source(ctx.module, arg.value))
        ctx.plan.replace(arg.value, lambda old: new)
    ctx.change(call, "rank0-output", f"{method_name(call)}() prints progress on rank 0 only")


def _is_rank0_callback(a: A.Analysis, expr) -> bool:
    return any(t.kind == A.CALLBACK and t.name in apis.KERAS_RANK0_CALLBACKS for t in a.types(expr))


def _callbacks(ctx, call: cst.Call) -> None:
    a = ctx.a
    extra = warmup.fit_callbacks(ctx, call)  # after the engine's own (Horovod's documented order)
    first = [ctx.fill(t) for t in [*ctx.backend.keras_callbacks(), *extra]]
    # Not through a **mapping (find_passed): a list there is made once and
    # would hand one broadcast callback to every fit() unpacking it.
    arg = fit_arg(call, "callbacks")
    if arg is None:
        if not keyword_free(ctx, call, "callbacks", "[" + ", ".join(first) + ", ...]", "keras-callbacks",
                            edit="take the callbacks out of {mapping} and pass callbacks=[" + ", ".join(first)
                                 + ", *those] to each fit() itself, by hand (made per call: a broadcast callback "
                                   "broadcasts one model once), keeping checkpoint/TensorBoard/CSV callbacks on "
                                   "rank 0 only"):
            return
        new = ctx.expr("[" + ", ".join(first) + "]")
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("callbacks", new)))
        ctx.change(call, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks added")
        return
    value = arg.value
    if isinstance(value, cst.Name) and value.value == "None":  # same as absent
        new = ctx.expr("[" + ", ".join(first) + "]")
        ctx.plan.replace(value, lambda old: new)
        ctx.change(value, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks added")
        return
    if isinstance(value, cst.List):
        _callback_list(ctx, value, extra)
        return
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        lists = None
        if len(bound) == 1 and isinstance(bound[0][1], cst.List):
            lists = [(value, bound[0][0], bound[0][1])]
        elif len(bound) == 1 and bound[0][1] is not None:
            lists = _returned_callback_lists(a, bound[0][1])
        if lists:
            _engine_callbacks_first(ctx, value, lists, first, f"those in {value.value}")
            return
    single = _single_callback(a, value)
    if single is not None:
        chief = ctx.backend.is_chief()
        text = source(ctx.module, value)
        if single:  # a file-writing callback: on rank 0 only
            new = ctx.expr("[" + ", ".join(first) + "] + ([" + text + f"] if {chief} else [])")
        else:
            new = ctx.expr("[" + ", ".join(first) + ", " + text + "]")
        ctx.plan.replace(value, lambda old: new)
        ctx.change(value, "keras-callbacks", f"the callback {a.code(value)} put in a list after the broadcast of initial variables and metric averaging callbacks"
                   + (" (on rank 0 only)" if single else ""))
        return
    lists = _helper_callback_lists(a, value)
    if lists:
        for node in lists:
            _callback_list(ctx, node, extra)
        return
    lists = _returned_callback_lists(a, value)
    if lists:  # a helper also used elsewhere: the engine's callbacks made here
        _engine_callbacks_first(ctx, value, lists, first, f"those {a.code(value)} returns")
        return
    new = ctx.expr("[" + ", ".join(first) + ", *" + source(ctx.module, value) + "]")
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks put first")
    ctx.warn(value, "rank0-io", f"callbacks in {a.code(value)} are unknown here: keep checkpoint/TensorBoard/CSV callbacks on rank 0 only")


def _single_callback(a: A.Analysis, value):
    """For a callbacks argument that is one callback object (not a list):
    True if it writes files (rank 0 only), False if not; None when it is not
    certainly one callback of one of these two sorts."""
    constructions = _callback_values(a, value, 0)
    if not constructions:
        return None
    rank0 = set()
    for call in constructions:
        ts = a.types(call)
        if not ts or any(t.kind != A.CALLBACK for t in ts):
            return None
        rank0.add(any(t.name in apis.KERAS_RANK0_CALLBACKS for t in ts))
    return rank0.pop() if len(rank0) == 1 else None


def _callback_values(a: A.Analysis, value, depth: int):
    """The calls a value is built by (a call, or a name bound only to calls)."""
    if isinstance(value, cst.Call):
        return [value]
    if isinstance(value, cst.Name) and depth < 4:
        out = []
        for _, bound in a.assigned_values(value):
            sub = _callback_values(a, bound, depth + 1) if bound is not None else None
            if not sub:
                return []
            out += sub
        return out
    return []


def _helper_callback_lists(a: A.Analysis, value) -> List[cst.List]:
    """``callbacks=get_callbacks(name)``: the list literals returned by a
    function of this module used only to build fit() callbacks."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return []
    fdefs = a.local_functions(value.func)
    if len(fdefs) != 1:
        return []
    returns = A.returned_values(fdefs[0])
    if not returns or not all(isinstance(r, cst.List) for r in returns):
        return []
    uses = [use for scope in a.scopes._all_scopes for use in scope.accesses.get(fdefs[0].name.value, ())
            if fdefs[0] in a.local_functions(use)]
    for use in uses:  # every use: callbacks=helper(...) of a fit call
        call = a.parent(use)
        arg = a.parent(call)
        fit = a.parent(arg)
        if not (isinstance(call, cst.Call) and call.func is use and isinstance(arg, cst.Arg) and isinstance(fit, cst.Call)
                and method_name(fit) in apis.KERAS_FIT_METHODS and is_model(a, receiver(fit))):
            return []
        found = fit_arg(fit, "callbacks")
        if found is None or found.value is not call:
            return []
    return returns


def _engine_callbacks_first(ctx, value, lists, first: List[str], whose: str) -> None:
    """callbacks=<value>, a name or helper call whose callbacks come from the
    list literals ``lists`` ((name it is bound to or None, that binding,
    list)): their file writers kept on rank 0, and the engine's callbacks
    made at this call, not put in the lists: a list given to several fit()
    calls (two models, a fit in a loop) would hold one broadcast callback,
    which broadcasts once -- only the first model would start equal on
    every rank."""
    for name, origin, node in lists:
        _callback_list(ctx, node, engine=False)
        if name is not None:
            _guard_appends(ctx, name, origin)
    new = ctx.expr("[" + ", ".join(first) + ", *" + source(ctx.module, value) + "]")
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, "keras-callbacks", f"broadcast of initial variables and metric averaging callbacks made "
                                         f"for this fit(), before {whose}")


def _returned_callback_lists(a: A.Analysis, value) -> List[Tuple[Optional[cst.Name], Optional[cst.CSTNode], cst.List]]:
    """``make_callbacks(...)``, a function of this module: the list literals
    it returns, each with the name it is bound to in the function and that
    binding (so appends to it are found), or the name None when returned as
    written. Empty unless every return is such a list."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return []
    fdefs = a.local_functions(value.func)
    if len(fdefs) != 1:
        return []
    out = []
    for r in A.returned_values(fdefs[0]):
        if isinstance(r, cst.List):
            out.append((None, None, r))
            continue
        bound = a.assigned_values(r) if isinstance(r, cst.Name) else []
        if len(bound) != 1 or not isinstance(bound[0][1], cst.List):
            return []
        out.append((r, bound[0][0], bound[0][1]))
    return out


def _callback_list(ctx, node: cst.List, extra=(), engine: bool = True) -> None:
    """The engine's callbacks put first in a list literal (unless not
    ``engine``), its rank-0 callbacks (checkpoints, logs) moved to a list
    kept on rank 0 only."""
    if node in _wrapped(ctx):
        return
    _wrapped(ctx).add(node)
    a = ctx.a
    first = [ctx.expr(t) for t in [*ctx.backend.keras_callbacks(), *extra]] if engine else []
    rank0 = [e for e in node.elements if not isinstance(e, cst.StarredElement) and _is_rank0_callback(a, e.value)]

    def rewrite(upd: cst.List):
        keep = [e for e, o in zip(upd.elements, node.elements) if o not in rank0]
        moved = [e for e, o in zip(upd.elements, node.elements) if o in rank0]
        if keep:
            last = keep[-1]
            trailing = node.elements[-1].comma if isinstance(node.elements[-1].comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
            keep[-1] = last.with_changes(comma=trailing)
        base = prepend_elements(upd.with_changes(elements=keep), first, layout=node) if first else \
            upd.with_changes(elements=keep)
        if not moved:
            return base
        # The rank-0 callbacks keep their own layout, in a list of their own.
        moved[-1] = moved[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if isinstance(node.elements[-1].comma, cst.Comma):
            moved[-1] = moved[-1].with_changes(comma=node.elements[-1].comma)
        tail = cst.IfExp(
            test=ctx.expr(ctx.backend.is_chief()),
            body=upd.with_changes(elements=moved, lpar=[], rpar=[]),
            orelse=cst.List([]),
            lpar=[cst.LeftParen()], rpar=[cst.RightParen()],
        )
        if not keep and not first:
            return tail  # every callback of the list writes files
        return cst.BinaryOperation(
            left=base.with_changes(lpar=[], rpar=[]),
            operator=cst.Add(),
            right=tail,
            lpar=upd.lpar, rpar=upd.rpar,
        )

    if not first and not rank0:
        return
    ctx.plan.replace(node, rewrite)
    if first:
        ctx.change(node, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks put first")
    else:
        ctx.change(node, "rank0-io", "the list's file-writing callbacks moved to a list of their own, kept on rank 0 "
                                     "only")
    for e in rank0:
        ctx.change(e.value, "rank0-io", f"{a.code(e.value.func) if isinstance(e.value, cst.Call) else a.code(e.value)} runs on rank 0 only")


def _guard_appends(ctx, name: cst.Name, origin: cst.CSTNode) -> None:
    """``callbacks.append(ModelCheckpoint(...))`` runs on rank 0 only, where
    the list it appends to is the one bound at origin (not another binding
    of the same name)."""
    a = ctx.a
    for call in a.calls:
        if method_name(call) in ("append", "extend", "insert") and isinstance(receiver(call), cst.Name) \
                and receiver(call).value == name.value and call.args and _is_rank0_callback(a, call.args[-1].value) \
                and any(o is origin for o, _ in a.assigned_values(receiver(call))):
            stmt = a.statement_of(call)
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                if ctx.plan.guard(stmt, ctx.expr(ctx.backend.is_chief())):
                    ctx.change(call, "rank0-io", f"{a.code(call)} runs on rank 0 only")
