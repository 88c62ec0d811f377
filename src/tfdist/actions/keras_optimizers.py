"""Wrapping and scaling the optimizers Keras compile is given, wherever they are built.

Keras ``compile``/``fit``: Horovod's Keras recipe.

The optimizer (wherever it is built) gets a scaled learning rate and is
wrapped in ``DistributedOptimizer``; ``fit`` gets the broadcast and metric
averaging callbacks first, file-writing callbacks on rank 0 only, progress
output on rank 0 only, its steps divided and its data sharded.
"""
from __future__ import annotations

import ast
import libcst as cst
from .. import apis
from ..engine import analysis as A
from .keywords import keyword_free
from ..facts.keras_models import bound_optimizer_construction, lr_done_state, mapping_unpackings, may_be_built_here, new_optimizer, optimizer_constructions, optimizer_of_name, wrapped_optimizers
from ..facts.syntax import append_arg, find_passed, kwarg, method_name, receiver, source
from . import learning_rate
from . import warmup_edits
from ..facts import model_compiles, warmups


# ------------------------------------------------------------------ optimizer
def _wrap(ctx, node: cst.BaseExpression, what: str, scaled: str = None) -> None:
    """Wrap the optimizer ``node`` for the engine; ``scaled``: a call
    template over ``{inner}`` scaling its learning rate at run time, put
    inside the wrapper (Horovod rebuilds the optimizer from its config)."""
    if node in wrapped_optimizers(ctx):
        return
    wrapped_optimizers(ctx).add(node)
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


def _build_named(ctx, string: cst.SimpleString, short: str) -> None:
    """``optimizer = "adam"`` read by compile() alone, beside other
    bindings that are optimizer objects: the object compile() would build
    from the name, built there (its rate scaled), so that compile() wraps
    whichever binding reaches it."""
    new = ctx.expr(optimizer_of_name(ctx, short))
    ctx.plan.replace(string, lambda old: new)
    ctx.change(string, "distributed-optimizer", ctx.say(
        "optimizer {name} built as {short} here, with its default {lr_done} (compile() gets it, or another binding)",
        name=string.value, short=short, lr_done=lr_done_state(ctx)))


def scale_compile_optimizer(ctx, compile_call: cst.Call) -> None:
    a = ctx.a
    arg = find_passed(a, compile_call, "optimizer", 0)
    if arg is None:
        short = apis.KERAS_OPTIMIZER_STRINGS[apis.KERAS_DEFAULT_COMPILE_OPTIMIZER]
        if not keyword_free(ctx, compile_call, "optimizer", new_optimizer(ctx, short), "distributed-optimizer"):
            return
        new = cst.parse_expression(new_optimizer(ctx, short))
        ctx.plan.replace(compile_call, lambda c: append_arg(c, kwarg("optimizer", new)))
        ctx.change(compile_call, "distributed-optimizer", ctx.say("default optimizer made explicit ({short}), {lr_done}, wrapped in {optimizer_wrapper}", short=short, lr_done=lr_done_state(ctx)))
        return
    if arg not in compile_call.args and not isinstance(arg.value, cst.Name):
        # an optimizer written in a dict of settings: made once, where the dict
        # is; several compile(**settings) would share one optimizer object
        unpacked = mapping_unpackings(a, compile_call)
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
        new = cst.parse_expression(new_optimizer(ctx, short))
        ctx.plan.replace(value, lambda old: new)
        ctx.change(value, "distributed-optimizer", ctx.say("optimizer {name} built as {short} with its default {lr_done}, wrapped in {optimizer_wrapper}", name=value.value, short=short, lr_done=lr_done_state(ctx)))
        return
    construction = bound_optimizer_construction(a, value)
    if construction is not None:
        call, type_ = construction
        if type_.kind == A.TF1_OPTIMIZER:
            raise _tf1_optimizer(ctx, call)
        learning_rate.scale_optimizer_lr(ctx, call, type_.name)
        warmup_edits.note_fit_optimizer(ctx, call)
        _wrap(ctx, call, f"optimizer {a.code(call.func)}")
        return
    found = optimizer_constructions(a, value, 0)
    if found:
        for call, type_ in found:
            if type_.kind == A.TF1_OPTIMIZER:
                raise _tf1_optimizer(ctx, call)
        for call, type_ in found:
            if isinstance(call, cst.SimpleString):
                _build_named(ctx, call, type_.name.rsplit(".", 1)[1])
                continue
            learning_rate.scale_optimizer_lr(ctx, call, type_.name)
            warmup_edits.note_fit_optimizer(ctx, call)
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
    maybe_scaled = may_be_built_here(a, value)
    if not ctx.backend.warmup_epochs and not maybe_scaled:
        scaled = learning_rate.scale_at_run_time(ctx, value, warmups.keras_module(ctx))
    _wrap(ctx, value, what, scaled)
    if scaled is None and maybe_scaled:
        ctx.warn(value, "lr-scaling", f"cannot tell where {a.code(value)} is built: it may be an optimizer this file "
                                      f"builds, or rebuilds from one's saved configuration (its rate then scaled "
                                      f"already), or another: make sure its learning rate is multiplied by the "
                                      f"number of processes once")
    elif scaled is None:
        ctx.warn(value, "lr-scaling", f"where {a.code(value)} is created is unknown: multiply its learning rate by the number of processes by hand")


def _tf1_optimizer(ctx, call: cst.Call):
    a = ctx.a
    names = sorted(n for n in a.names(call) if n in apis.TF1_OPTIMIZERS)
    short = names[0].rsplit(".", 1)[1] if names else a.code(call.func)
    return ctx.unsupported(call, ctx.say(
        "the TF1 optimizer {optimizer}(...) given to Keras compile(): {tf1_optimizer_in_keras}; use the Keras "
        "optimizer instead (tf.keras.optimizers.{keras_optimizer}(...) with the same learning rate)",
        optimizer=a.code(call.func), keras_optimizer=short.replace('Optimizer', '') or short))


def _silent(a, value, depth: int = 0) -> bool:
    if isinstance(value, cst.Integer):
        return value.evaluated_value == 0
    if isinstance(value, cst.Name) and value.value == "False":
        return True
    if not isinstance(value, cst.Name) or depth > 4:
        return False
    bound = a.assigned_values(value)
    return bool(bound) and all(v is not None and _silent(a, v, depth + 1) for _, v in bound)


def rank0_verbose(ctx, call: cst.Call, position: int, default: str) -> None:
    arg = find_passed(ctx.a, call, "verbose", position)
    chief = ctx.backend.is_chief()
    if arg is None:
        if not keyword_free(ctx, call, "verbose", ctx.fill(f"{default} if {chief} else 0"), "rank0-output"):
            return
        new = ctx.expr(f"{default} if {chief} else 0")
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("verbose", new)))
    elif _silent(ctx.a, arg.value):
        return  # silent already (verbose=0, or a name bound only to 0)
    else:
        new = ctx.expr(f"{{v}} if {chief} else 0", v=source(ctx.module, arg.value))
        ctx.plan.replace(arg.value, lambda old: new)
    ctx.change(call, "rank0-output", f"{method_name(call)}() prints progress on rank 0 only")


def refuse_shared_optimizer(ctx, compiles) -> None:
    """One optimizer object handed to the ``compile()`` of two different
    models (a Keras 2 GAN: ``discriminator.compile(optimizer=adam)``,
    ``gan.compile(optimizer=adam)``). Measured (TF 2.21): under a strategy
    Keras 3 builds the optimizer for the variables of the first model it
    trains and the other's first step stops ("Unknown variable"), and tf-keras
    does the same ("The optimizer cannot recognize variable"). Giving each
    compile() its own optimizer changes what the script trains with (one step
    count, and a decay or schedule that goes with it, shared by both models):
    refused with that edit, for the user to make."""
    a = ctx.a
    first = {}
    for call in compiles:
        arg = find_passed(a, call, "optimizer", 0)
        if arg is None or not isinstance(arg.value, cst.Name):
            continue
        origins = {id(o) for o, _ in a.assigned_values(arg.value) if o is not None}
        model = receiver(call)
        models = model_compiles.model_origins(a, model) or (
            frozenset(id(o) for o, _ in a.assigned_values(model) if o is not None)
            if isinstance(model, cst.Name) else frozenset())  # built where tfdist cannot see: the binding
        if len(origins) != 1 or not models:
            continue
        key = next(iter(origins))
        if key not in first:
            first[key] = (call, models)
            continue
        other, other_models = first[key]
        if other_models & models:
            continue  # the same model compiled again
        raise ctx.unsupported(call, (
            f"the optimizer {a.code(arg.value)} is handed to the compile() of two models ({a.code(receiver(other))} "
            f"at line {a.line(other)}, {a.code(receiver(call))} at line {a.line(call)}): under a strategy Keras builds "
            "it for the variables of the first model it trains, and the other model's first step stops (Keras 3: "
            "\"Unknown variable\"; tf-keras: \"The optimizer cannot recognize variable\"): nothing converted. Build an "
            f"optimizer for each compile() (at line {a.line(call)}, a new one made like {a.code(arg.value)}; the two "
            "models then count their steps apart, which a decay or a schedule reads), and convert again"))


def optimizers_made_elsewhere(ctx, averaging_wrapper: bool) -> None:
    """A fit (or train_on_batch) of a model whose optimizer this file never
    configures (another module's function compiles it, or a loader restores
    it). Where the engine averages gradients through a wrapper of that
    optimizer (Horovod's DistributedOptimizer), the ranks would train apart:
    refused with the edit. Where the strategy averages them itself, the
    model trains right once made in its scope; only its learning rate stays
    unscaled: warned with the edit."""
    a = ctx.a
    for found in model_compiles.uncompiled_fits(a):
        model = a.code(receiver(found.call))
        if averaging_wrapper:
            raise ctx.unsupported(found.call, ctx.say(
                "{fit} (line {line}) trains {model}, made by {where}; no compile() of this file configures its "
                "optimizer, so the conversion cannot wrap it in {optimizer_wrapper} and the ranks would not average "
                "their gradients: nothing converted. Compile {model} in this script "
                "({model}.compile(optimizer=..., loss=...), which tfdist wraps and scales; a loaded model too, after "
                "loading), or wrap the optimizer where it is made ({optimizer_wrapper}, learning rate x {size}), and "
                "convert again", fit=a.code(found.call.func), line=str(a.line(found.call)), model=model,
                where=found.where))
        ctx.warn(found.call, "lr-scaling", ctx.say(
            "the optimizer {model} trains with is set by {where}, not by a compile() of this file: its learning "
            "rate is not scaled by the number of replicas; multiply it by {size} where it is set for the scaled "
            "rate the rest of the conversion assumes",
            model=model, where=found.where))
