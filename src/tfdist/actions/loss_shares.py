"""Making each replica's loss its share of the global mean.

Each replica's loss: its share of the global mean.

Under a strategy the optimizer SUMS the replicas' gradients, so every
replica must differentiate its loss divided by the number of replicas --
unless Keras 3 already divided it: a Keras ``Loss`` object with a mean
reduction, run by a strategy, returns the replica's share itself. What the
loss is made of is decided by ``facts/losses.loss_kind`` (names, ``self``
attributes, the module's functions and lambdas, parameters; never its text);
a loss that adds both kinds is warned about, not guessed, and so is a call
tfdist cannot see into (divided, with the edit if it is Keras's).
"""
from __future__ import annotations

import libcst as cst
from ..engine import dataflow
from ..facts.losses import RULE, loss_kind, plain_terms, undecided_term
from ..facts.syntax import find_arg, source
from ..facts import replica_state


def loss_share(ctx, w: cst.With, grad_call: cst.Call) -> None:
    """``tape.gradient(loss, ...)`` differentiates this replica's share of
    the global mean loss, computed while the tape still records."""
    a = ctx.a
    target = find_arg(grad_call, "target", 0)
    if target is None:
        return
    base = target.value.value if isinstance(target.value, cst.Name) else "loss"
    name = replica_state.free_local_name(ctx, f"scaled_{base}")
    stmt = a.statement_of(grad_call)
    inside = dataflow.is_inside(a, stmt, w.body)
    kind = loss_kind(a, target.value)
    plain = plain_terms(a, target.value) if kind == "mixed" and isinstance(target.value, cst.Name) else None
    if plain:
        divide_terms(ctx, plain)
        kind = "keras"
    if kind == "mixed":
        ctx.warn(target.value, RULE, ctx.say(
            "{target} computes with a Keras loss object's value (already divided by {size} under {engine} with "
            "Keras 3) and with terms or operations of its own (added terms, a product, a mean of it): tfdist cannot "
            "tell which part to divide; keep the Loss object's value as Keras returns it and divide by {size} only "
            "the terms the step computes itself, before tape.gradient", target=a.code(target.value)))
        return
    if kind == "unknown":
        # divided, as a loss of the step's own; what tfdist cannot see into is named with the edit
        term = undecided_term(a, target.value) or target.value
        ctx.warn(term, RULE, ctx.say(
            "tfdist cannot tell whether {term} is a value Keras divides by {size} under {engine} (a Keras Loss "
            "object with a mean reduction): the gradient is taken of the loss divided by {size}; if it is such a "
            "value, differentiate {target} itself", term=a.code(term), target=a.code(target.value)))
    if kind == "keras" and "Keras" in ctx.patterns and ctx.facts.get("keras_flavor") != "keras":
        _legacy_keras_clash(ctx, target.value)
    if kind == "keras" and isinstance(target.value, cst.Name):
        # Keras 3 divides a Loss object's mean by the number of replicas when
        # a strategy runs it: the gradient is right as it is; the name gets
        # the mean back for what the step prints and returns.
        code = (f"{name} = {base}\n"
                f"{base} = " + ctx.fill(ctx.backend.per_replica_batch(name)))
        comment = ctx.say("{engine}: Keras 3 divided this loss by the number of replicas, as the optimizer (which sums "
                          "their gradients) needs; {base} is the mean again for what the step reports.", base=base)
        message = ctx.say("gradient of {target} as Keras 3 divides it by {size} under {engine}; the step reports the mean",
                          target=base)
    else:
        code = f"{name} = " + ctx.fill(ctx.backend.gradient_share(source(ctx.module, target.value)))
        comment = ctx.say("{engine}: the optimizer sums the replicas' gradients: "
                          "differentiate this replica's share of the mean loss.")
        message = ctx.say("gradient of {target} / {size} (the optimizer sums the replicas' gradients)",
                          target=a.code(target.value))
    new = ctx.stmts(code, comment=comment)
    if inside:
        ctx.plan.insert_before(stmt, new)
    else:
        last = w.body.body[-1]
        ctx.plan.insert_after(last, new)
    ctx.plan.replace(target.value, lambda old, name=name: cst.Name(name))
    ctx.change(grad_call, RULE, message)


def divide_terms(ctx, plain) -> None:
    """Keras 3 divided the Loss objects' values of a loss already; the terms
    added to them (regularisation, a mean of its own: ``plain``) are divided
    here, so the whole is this replica's share like a Keras loss alone."""
    a = ctx.a
    done = ctx.state("replica_loss.divided_terms")
    for term in plain:
        if id(term) in done:
            continue
        done.add(id(term))
        ctx.plan.replace(term, lambda old: ctx.expr(ctx.backend.gradient_share(source(ctx.module, old))))
        ctx.change(term, RULE, ctx.say("{term} divided by {size}: added to a Keras loss object's value, which "
                                       "Keras divides by the number of replicas itself", term=a.code(term)))


def _legacy_keras_clash(ctx, loss) -> None:
    """The file also fits a tf.keras model: under MultiWorkerMirroredStrategy
    the conversion runs it on tf-keras (keras-team/keras#20585), where a
    Loss object with its default reduction raises in a custom step run by a
    strategy -- measured: "Please use tf.keras.losses.Reduction.SUM or
    NONE", every worker exits 1. Said once per file."""
    done = ctx.state("replica_loss.legacy_clash")
    if done:
        return
    done.add(True)
    ctx.warn(loss, RULE, ctx.say(
        "this file also trains with fit(), which under MultiWorkerMirroredStrategy (TF_CONFIG) runs on tf-keras "
        "(keras-team/keras#20585); there this step's Keras loss object, with its default reduction, raises "
        "ValueError when the strategy runs it: build it with reduction='none' and average it with "
        "tf.nn.compute_average_loss(..., global_batch_size=<per-replica batch> * {size}), or train the custom "
        "loop and fit() in separate scripts"))
