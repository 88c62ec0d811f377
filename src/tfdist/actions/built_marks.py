"""A Keras 3 model whose class has no ``call()`` marked built before fit() under a strategy
(rules/replica_fit.py): which classes is facts/model_builds.fitted_class_without_call."""
from __future__ import annotations

import libcst as cst
from ..facts import layer_draws, model_builds, replica_state


def mark_built_without_call(ctx, call: cst.Call) -> None:
    """A Keras 3 model whose class has no call() -- its train_step does the
    work on sub-models (the GAN of the Keras guides) -- trains as written on
    one process, but under a strategy Keras 3's fit first builds the model
    by calling it on a batch, which fails ("Unable to automatically build
    the model"). Its variables are its sub-models': it is marked built
    before fit() (tf-keras, which a tf.keras script uses on several workers,
    takes it as well). Which classes: facts/model_builds.fitted_class_without_call."""
    found = model_builds.fitted_class_without_call(ctx.a, call)
    if found is None:
        return
    model, owner, cls = found
    a = ctx.a
    classes = [cls]
    # Keras 3 builds the compiled loss by calling the model too: a step that never calls it (it calls
    # the loss object, self.loss(y, y_pred)) leaves it unused, so it is marked built as well
    loss_too = not model_builds.reads_compiled_loss(owner, cls)
    key = ("built", model.value, id(a.statement_of(call)))
    done = ctx.state("replica_fit.built")
    if key in done:
        return
    done.add(key)
    lines = f"{model.value}.built = True"
    if loss_too:
        lines += (f"\nif getattr({model.value}, \"_compile_loss\", None) is not None:"
                  f"\n    {model.value}._compile_loss.built = True")
    ctx.plan.insert_before(a.statement_of(call), ctx.stmts(
        lines,
        comment=ctx.say("{engine}: Keras 3's fit() builds a model by calling it on a batch when a strategy runs it; "
                        "{cls} has no call() (its train_step trains its sub-models, which hold the variables): "
                        "it is marked built" + (", and the compiled loss its train_step never calls (Keras 3)"
                                                if loss_too else "") + ".", cls=classes[0].name.value)))
    ctx.change(call, replica_state.RULE, ctx.say(
        "{model} marked built before fit(): {cls} has no call() for Keras 3 to build it with under {engine}",
        model=model.value, cls=classes[0].name.value))
    if owner is not a:
        _warn_imported_draws(ctx, call, owner, cls)


def _warn_imported_draws(ctx, call: cst.Call, owner, cls: cst.ClassDef) -> None:
    """The class is another module's, which tfdist leaves as it is: an unseeded keras.random draw
    in its methods (rules/layer_seeds.py gives a class of the converted file a SeedGenerator)
    fails in the replicated step; the edit is said, with the draw's place."""
    lineage = owner.lineage(cls)
    draws = [d for d in layer_draws.unseeded_layer_draws(owner) if d.cls in lineage]
    if not draws:
        return
    first = draws[0]
    ctx.warn(call, replica_state.RULE, ctx.say(
        "{cls} (module {module}) draws {draw}() without a seed (its line {line}{more}): under {engine} Keras 3 "
        "creates its global SeedGenerator inside the replicated step, which fails; give {cls} its own "
        "(self.seed_generator = keras.random.SeedGenerator() in __init__) and pass seed=self.seed_generator "
        "to each draw", cls=cls.name.value, module=owner.project.module_name or "?",
        draw=owner.code(first.call.func), line=str(owner.line(first.call)),
        more=f", and {len(draws) - 1} more" if len(draws) > 1 else ""))
