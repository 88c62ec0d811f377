"""Unseeded Keras 3 draws in a layer's methods get a SeedGenerator the layer
owns (tf.distribute).

``keras.random.uniform(shape)`` in a layer's ``call()`` draws from Keras's
global SeedGenerator, which Keras creates on first use -- inside the
replicated step under a strategy, where creating it fails
(facts/layer_draws.py). The layer is given its own generator, made in its
``__init__`` right after ``super().__init__(...)`` (so in the strategy's
scope, with the model), and each draw in the class is handed it: what
Keras's own Dropout and noise layers do; a class without an ``__init__`` of
its own gets one handing its arguments on. Where it cannot be written (an
``__init__`` not calling ``super().__init__`` at its top level; a draw
imported by its bare name) the edit is warned instead.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine.rule import Rule, register
from ..facts import layer_draws
from ..facts import replica_state
from ..facts.syntax import append_arg, kwarg

ATTRIBUTE = "seed_generator"


def _attribute(cls: cst.ClassDef) -> str:
    """A name for the generator no ``x.<name>`` of the class uses yet."""
    name, n = ATTRIBUTE, 1
    while layer_draws.attribute_used(cls, name):
        n += 1
        name = f"{ATTRIBUTE}_{n}"
    return name


@register
class LayerSeeds(Rule):
    id = "layer-seeds"
    description = ("Unseeded keras.random draws in a layer's methods: the layer owns a SeedGenerator, made in its "
                   "__init__, and each draw is handed it (Keras 3's global one cannot be made inside a replica).")
    engines = ("tf-distribute",)
    kinds = (replica_state.RULE,)
    example = "keras/layer_random_noise"
    order = 58

    def apply(self, ctx) -> None:
        a = ctx.a
        made = ctx.state("layer_seeds.made", dict)  # id(class) -> the attribute holding its generator
        for draw in layer_draws.unseeded_layer_draws(a):
            init = layer_draws.super_init_statement(a, draw.cls)
            own_init = any(isinstance(s, cst.FunctionDef) and s.name.value == "__init__" for s in draw.cls.body.body)
            func = draw.call.func
            if (init is None and own_init) or not isinstance(func, cst.Attribute) \
                    or not isinstance(draw.cls.body, cst.IndentedBlock):
                ctx.warn(draw.call, replica_state.RULE, ctx.say(
                    "{draw} draws without a seed in {cls}.{method}(): under {engine} Keras 3 makes its global seed "
                    "generator inside the replicated step, which fails; give {cls} a generator of its own "
                    "(`self.seed_generator = keras.random.SeedGenerator()` in its __init__) and pass "
                    "`seed=self.seed_generator` here",
                    draw=a.code(func), cls=draw.cls.name.value, method=draw.method.name.value))
                continue
            attr = made.get(id(draw.cls))
            if attr is None:
                attr = made[id(draw.cls)] = _attribute(draw.cls)
                generator = f"{a.code(func.value)}.{apis.KERAS3_SEED_GENERATOR}()"
                if init is not None:
                    ctx.plan.insert_after(init, ctx.stmts(f"{_first_param(a, init)}.{attr} = {generator}"))
                else:  # an __init__ of its own, handing everything on to its base's
                    _add_init(ctx, draw.cls, f"self.{attr} = {generator}")
                ctx.change(init if init is not None else draw.cls, replica_state.RULE, ctx.say(
                    "{cls} owns a seed generator for its random draws, made with it (in {engine}'s scope)",
                    cls=draw.cls.name.value))
            seed = cst.parse_expression(f"{draw.method.params.params[0].name.value}.{attr}")
            if draw.seed is not None:
                ctx.plan.replace(draw.seed.value, lambda _old, seed=seed: seed)
            else:
                ctx.plan.replace(draw.call, lambda c, seed=seed: append_arg(c, kwarg("seed", seed)))
            ctx.change(draw.call, replica_state.RULE, ctx.say(
                "{draw} draws from {cls}'s own seed generator: Keras 3's global one cannot be made inside "
                "{engine}'s replicated step", draw=a.code(func), cls=draw.cls.name.value))


def _add_init(ctx, cls: cst.ClassDef, line: str) -> None:
    """An ``__init__`` first in the class body (after its docstring) that
    hands every argument on to the base's and then runs ``line``."""
    body = list(cls.body.body)
    first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
    ctx.plan.insert_before(first, ctx.stmts(
        "def __init__(self, *args, **kwargs):\n"
        "    super().__init__(*args, **kwargs)\n"
        f"    {line}\n"))
    ctx.plan.blank_lines_before(first, 1)


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) and isinstance(
        stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _first_param(a, stmt) -> str:
    """The name of the first parameter of the method holding stmt (``self``)."""
    fdef = a.enclosing_function(stmt)
    return fdef.params.params[0].name.value
