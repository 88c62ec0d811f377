"""Converting a Keras ``train_step`` to run on every replica: each replica's
gradient target its share of the global mean loss, exactly once, or the step
refused with its line. What Keras divides itself under a strategy, and so
what each kind of loss needs, is told in ``tfdist.facts.train_steps``, which
answers those questions for this module.
"""
from __future__ import annotations

from typing import List, Set, Tuple
import libcst as cst
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts.syntax import append_arg, find_arg, kwarg, method_name, receiver, source
from ..facts.train_steps import PLAIN, RULE, Refusal, SCALED, direct_kind, feeding_statements, reaching_names, reporting_reads, in_scaled_assignment, in_step, is_self_attribute, keras_flavor, mean_kind, mentions_any, of_watched_inputs, only_called_in, optimizer_applies, read_elsewhere, single_assignment, steps
from . import global_gradients
from . import loss_shares
from . import tape_loops
from ..facts import gradient_tapes
from ..facts import losses
from ..facts import replica_state


def apply(ctx) -> None:
    a = ctx.a
    for step in steps(a):
        try:
            _convert_step(ctx, step)
        except Refusal as r:
            raise ctx.unsupported(r.node, ctx.say(r.reason))


def _convert_step(ctx, step: cst.FunctionDef) -> None:
    a = ctx.a
    for c in a.calls:
        if in_step(a, c, step) and method_name(c) == "minimize":
            raise Refusal(c, "optimizer.minimize() in a custom " + step.name.value + ": it computes and applies the "
                          "gradients of a loss tfdist cannot follow; compute them with a GradientTape and apply them")
    applies = optimizer_applies(a, step)
    for p in applies:
        for keyword in ("skip_gradients_aggregation", "experimental_aggregate_gradients"):
            if find_arg(p, keyword, None) is not None:
                raise Refusal(p, keyword + " given to the optimizer: tf-keras then does not sum the replicas' "
                              "gradients (optimizer.apply_gradients -> aggregate_gradients); tfdist cannot tell "
                              "where they are averaged under {engine}; not converted{alternative}")
    gradient_calls: List[Tuple[cst.With, cst.Call]] = []
    tapes = [(w, name) for w, _item, name in gradient_tapes.tapes(a) if in_step(a, w, step)]
    for w, name in tapes:
        for g in gradient_tapes.gradient_calls(a, w, name):
            if of_watched_inputs(a, w, name, g):
                continue  # a gradient penalty's d(critic)/d(inputs): part of a loss, not a training gradient
            # the tape this name is bound to at the call: the last `with ... as name` before it
            latest = max((t for t, n in tapes if n == name and a.line(t) <= a.line(g)), key=a.line)
            if latest is w:
                gradient_calls.append((w, g))
    for w, g in gradient_calls:
        names = reaching_names(a, g, step)
        if not any(mentions_any(p, names) or g in list(walk(p)) for p in applies):
            raise Refusal(g, "gradients a custom " + step.name.value + " computes and no Keras optimizer applies "
                          "(apply_gradients / apply): under {engine} nothing would average them over the replicas; "
                          "not converted{alternative}")
    done: Set[int] = set()
    for w, g in gradient_calls:
        _share_gradient(ctx, step, w, g, done)
    # clipped, scaled...: summed first, so the change acts on the global batch's gradient
    global_gradients.sum_before_changes(ctx, RULE, [g for _w, g in gradient_calls], applies)
    # The loss Keras divided, reported by the step: the mean again.
    feeding = feeding_statements(a, step, tuple(find_arg(g, "target", 0).value for _w, g in gradient_calls))
    for asg in a.assigns:
        if in_step(a, asg, step) and id(asg) not in done and direct_kind(a, asg.value, step) == SCALED:
            _report_mean(ctx, asg, step, feeding)
    for c in a.calls:
        if in_step(a, c, step) and not in_scaled_assignment(a, c, step) and direct_kind(a, c, step) == SCALED \
                and not any(c is t for _w, g in gradient_calls for t in walk(g)) and not _in_done(a, c, done):
            ctx.warn(c, RULE, ctx.say("{call}: Keras divides this loss by {size} under {engine}; what the step "
                                      "reports of it is that share: multiply it by {size} where it is reported",
                                      call=a.code(c)))
    for p in applies:
        if not is_self_attribute(a, receiver(p), "optimizer"):  # compile()'s optimizer is scaled there
            tape_loops.scale(ctx, receiver(p))
    _legacy_loss_objects(ctx, step)


def _share_gradient(ctx, step, w: cst.With, g: cst.Call, done: Set[int]) -> None:
    a = ctx.a
    target = find_arg(g, "target", 0)
    if target is None:
        raise Refusal(g, "tape.gradient without a loss: cannot tell what to divide by the number of replicas")
    plain = losses.plain_terms(a, target.value) if isinstance(target.value, cst.Name) \
        and losses.loss_kind(a, target.value) == "mixed" else None
    kind = SCALED if plain else mean_kind(a, target.value, step)
    if kind == PLAIN:
        base = target.value.value if isinstance(target.value, cst.Name) else "loss"
        name = replica_state.free_local_name(ctx, f"scaled_{base}")
        code = f"{name} = " + ctx.fill(ctx.backend.gradient_share(source(ctx.module, target.value)))
        new = ctx.stmts(code, comment=ctx.say(
            "{engine}: fit() runs this step on every replica and the optimizer sums their gradients: "
            "differentiate this replica's share of the mean loss."))
        stmt = a.statement_of(g)
        if dataflow.is_inside(a, stmt, w.body):
            ctx.plan.insert_before(stmt, new)
        else:
            ctx.plan.insert_after(w.body.body[-1], new)
        ctx.plan.replace(target.value, lambda old, name=name: cst.Name(name))
        ctx.change(g, RULE, ctx.say("gradient of {target} / {size} (the optimizer sums the replicas' gradients)",
                                    target=a.code(target.value)))
        return
    # SCALED: a name bound once, in the step, to the loss Keras divided
    asg = single_assignment(a, target.value, step, divided=bool(plain))
    if asg is None and _unreported_bindings(ctx, step, target.value, done):
        ctx.change(g, RULE, ctx.say("gradient of {target} kept: Keras divides it by {size} under {engine}, as the "
                                    "optimizer (which sums the replicas' gradients) needs", target=a.code(target.value)))
        return
    if asg is None:
        raise Refusal(target.value, "the loss " + a.code(target.value) + " is divided by the number of replicas by "
                      "Keras under {engine} and reaches tape.gradient through more than one binding: cannot tell "
                      "what the step reports; not converted{alternative}")
    if plain:
        loss_shares.divide_terms(ctx, plain)  # the terms Keras does not divide: this replica's share too
    base = target.value.value
    done.add(id(asg))
    if not read_elsewhere(a, asg, step, target.value):
        ctx.change(g, RULE, ctx.say("gradient of {target} kept: Keras divides it by {size} under {engine}, as the "
                                    "optimizer (which sums the replicas' gradients) needs", target=base))
        return
    name = replica_state.free_local_name(ctx, f"scaled_{base}")
    new = ctx.stmts(f"{name} = {base}\n{base} = " + ctx.fill(ctx.backend.loss_mean_again(name)),
                    comment=ctx.say("{engine}: Keras divided this loss by the number of replicas, as the optimizer "
                                    "(which sums their gradients) needs; {base} is the mean again for what the step "
                                    "reports.", base=base))
    ctx.plan.insert_after(a.statement_of(asg), new)
    ctx.plan.replace(target.value, lambda old, name=name: cst.Name(name))
    ctx.change(g, RULE, ctx.say("gradient of {target} as Keras divides it by {size} under {engine}; the step "
                                "reports the mean", target=base))


def _in_done(a, node, done: Set[int]) -> bool:
    """node is part of the value of an assignment the conversion handled whole (a term of a
    loss whose other terms it divided: what the step reports of it is the mean again)."""
    return any(isinstance(p, cst.Assign) and id(p) in done for p in a.ancestors(node))


def _unreported_bindings(ctx, step, loss, done: Set[int]) -> bool:
    """The loss reaches tape.gradient through several assignments in the step (``loss =
    self.compiled_loss(...)``, then ``if mixed: loss = optimizer.get_scaled_loss(loss)``),
    each of a value Keras divides, and none of them is read but on the way to the gradient:
    nothing the step reports needs the mean back (each marked done)."""
    a = ctx.a
    if not isinstance(loss, cst.Name):
        return False
    bound = a.assigned_values(loss)
    if len(bound) < 2 or not all(isinstance(o, cst.Assign) and v is not None and in_step(a, o, step)
                                 and isinstance(o.targets[0].target, cst.Name) for o, v in bound):
        return False
    if any(losses.loss_kind(a, v) != "keras" for _o, v in bound):
        return False
    feeding = feeding_statements(a, step, (loss,))
    if any(reporting_reads(a, o, step, feeding, loss) for o, _v in bound):
        return False
    done.update(id(o) for o, _v in bound)
    return True


def _report_mean(ctx, asg: cst.Assign, step, feeding: frozenset) -> None:
    a = ctx.a
    target = asg.targets[0].target if len(asg.targets) == 1 else None
    if not isinstance(target, cst.Name):
        raise Refusal(asg, "a loss Keras divides by the number of replicas under {engine}, assigned to "
                      + a.code(asg.targets[0].target) + ": cannot give the step the mean back; "
                      "not converted{alternative}")
    base = target.value
    if not read_elsewhere(a, asg, step, None):
        return
    reports = reporting_reads(a, asg, step, feeding)
    if any(id(a.statement_of(n)) in feeding for n in walk(a.enclosing_function(asg) or step)
           if isinstance(n, cst.Name) and n.value == base and n is not target
           and any(origin is asg for origin, _ in a.assigned_values(n))):
        # also a term of a loss differentiated later (``loss = (student_loss + distill_loss) / 2``):
        # it stays divided there; each read that reports it gets the mean
        for n in reports:
            code = ctx.fill(ctx.backend.loss_mean_again(base))
            wrap = not isinstance(a.parent(n), (cst.Arg, cst.Assign, cst.Element, cst.Return, cst.DictElement))
            new = ctx.expr(f"({code})" if wrap else code)
            ctx.plan.replace(n, lambda old, new=new: new)
            ctx.change(n, RULE, ctx.say("{base}: Keras divides it by {size} under {engine}, as the loss it is "
                                        "part of needs; multiplied back where the step reports it", base=base))
        return
    new = ctx.stmts(f"{base} = " + ctx.fill(ctx.backend.loss_mean_again(base)), comment=ctx.say(
        "{engine}: Keras divided this loss by the number of replicas; the step reports the mean."))
    ctx.plan.insert_after(a.statement_of(asg), new)
    ctx.change(asg, RULE, ctx.say("{base}: Keras divides it by {size} under {engine}; multiplied back for what the "
                                  "step reports", base=base))


def _legacy_loss_objects(ctx, step) -> None:
    """A tf.keras script's step calling a Keras Loss object with a mean
    reduction: Keras 3 divides its value by the number of replicas (the
    step is converted for that), but on TF_CONFIG workers the conversion
    runs tf-keras (keras-team/keras#20585), whose Loss refuses that
    reduction under a strategy outside compile() (``Loss._get_reduction``
    raises ValueError: every worker stops). When the object is built in
    this file and used nowhere but in calls of this step, it is built with
    reduction="none" and each call averaged as Keras 3's mean reduction does
    under a strategy (over all its values, divided by the number of
    replicas): the same value on both Keras versions. Otherwise warned once
    per file, with the edit."""
    a = ctx.a
    if keras_flavor(a) == "keras":
        return
    calls = [c for c in a.calls if in_step(a, c, step) and losses.is_keras_loss_object(a, c.func)]
    if not calls:
        return
    # a Loss subclass returning one number of its own: Keras 3 does not divide it, so neither may
    # the rewrite below; tf-keras still raises on its reduction: warned
    own_numbers = any(losses.call_kind(a, c) != "keras" for c in calls)
    constructions = None if own_numbers else only_called_in(a, calls)
    if constructions is None:
        done = ctx.state("replica_train_step.legacy_loss_objects")
        if not done:
            done.add(True)
            ctx.warn(calls[0], RULE, ctx.say(
                "a Keras Loss object with a mean reduction called in {step}: under MultiWorkerMirroredStrategy "
                "(TF_CONFIG) fit() runs on tf-keras (keras-team/keras#20585), which raises ValueError on it outside "
                "compile() (Keras 3, on one host, divides it by {size} as the step needs): give it "
                "reduction=\"none\" and average it with tf.nn.compute_average_loss(..., global_batch_size=<per-replica "
                "batch> * {size}), or use self.compute_loss", step=step.name.value))
        return
    state = ctx.state("replica_train_step.loss_objects", dict)
    if "mean" not in state:
        state["mean"] = ctx.imports.free_name("replica_mean_loss")
        ctx.define(
            f"def {state['mean']}(values):\n"
            f"    \"\"\"The mean of a Keras loss object's values (built with reduction=\"none\"), divided by the number of\n"
            f"    replicas as its mean reduction is under a strategy: each replica's gradient is its share of the sum.\"\"\"\n"
            f"    values = {{tf}}.convert_to_tensor(values)\n"
            f"    return {{tf}}.reduce_sum(values) / {{tf}}.cast({{tf}}.size(values), values.dtype) / "
            f"{{tf}}.distribute.get_strategy().num_replicas_in_sync",
            ctx.say("{engine}: a Keras loss object's mean as a strategy takes it, on Keras 3 and tf-keras alike."))
    for k in constructions:
        if k in state:
            continue
        state[k] = True
        reduction = find_arg(k, "reduction", None)
        new = ctx.expr(ctx.quoted("none"))
        if reduction is not None:
            ctx.plan.replace(reduction.value, lambda old, new=new: new)
        else:
            ctx.plan.replace(k, lambda old, new=new: append_arg(old, kwarg("reduction", new)))
        ctx.change(k, RULE, ctx.say(
            "{loss} built with reduction=\"none\": tf-keras, which runs fit() on TF_CONFIG workers "
            "(keras-team/keras#20585), refuses a mean reduction outside compile(); {step} averages it instead",
            loss=a.code(k.func), step=step.name.value))
    for c in calls:
        if c in state:
            continue
        state[c] = True
        template = f"{state['mean']}({{inner}})"
        ctx.plan.replace(c, lambda upd, template=template: ctx.expr(ctx.fill(template, inner=ctx.module.code_for_node(upd))))
        ctx.change(c, RULE, ctx.say("{call}: its values averaged and divided by {size}, as a mean reduction is under "
                                    "{engine}", call=a.code(c)))
