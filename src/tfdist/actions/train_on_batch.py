"""Converting ``train_on_batch`` loops for both engines.

Keras ``train_on_batch`` loops (a GAN's discriminator and combined model,
or one model stepped over slices): what each engine needs.

Horovod (per-rank batches): every compiled optimizer is wrapped and its
learning rate scaled (keras_fit's compile handling); fit's broadcast
callback does not run for train_on_batch, so each model's variables and its
optimizer's state are broadcast from rank 0 once, after the model's first
train_on_batch created the optimizer's slots (``optimizer.iterations == 1``,
checked after every call site: only one fires); the step loop is divided as
a tape loop's is (gradient_tape._divide_loops: arrays read by offset sliced
by rank, the step count divided) and NumPy's global generator re-seeded by
rank before a loop drawing its batches from it.

tf.distribute (measured on TF 2.21, tf-keras, 2 replicas: tests/slow
correctness script ``tob_gan``): train_on_batch takes the batch it is given
as the *global* batch and splits it between the replicas -- local replicas
under MirroredStrategy take their slices of it, and under
MultiWorkerMirroredStrategy each worker keeps its own slice of the batch it
fed (worker g the g-th part), the gradients averaged. So the user's batch
stays the global batch: the models and optimizers are built in the scope,
the learning rate and the step count are kept, and every replica trains on
its own part of every batch. Keras 3 (``import keras``) is refused: its
train_on_batch fails under MultiWorkerMirroredStrategy (measured on Keras
3.15: "Invalid reduction dimension 0 for input with 0 dimensions").
"""
from __future__ import annotations

from typing import List
import libcst as cst
from .. import apis
from ..facts.batch_steps import KERAS3_REFUSAL, NUMPY_GENERATORS, by_model, compiled_as, model_key, step_loops
from ..facts.syntax import calls_in, find_arg, method_name, receiver
from . import per_rank_draws
from . import replicas
from . import step_division
from . import tape_loops
from ..facts import keras_models
from ..facts import shard_points


def compile_of(ctx, call: cst.Call) -> cst.Call:
    """The one compile() of the model a train_on_batch call steps."""
    a = ctx.a
    model = receiver(call)
    keys = compiled_as(a, model)
    compiles = keras_models.model_calls(a, {"compile"})
    found = [c for c in compiles if model_key(a, receiver(c)) in keys]
    if not found:
        # no compile of its own binding: one of an object it may hold (a
        # tuple of models unpacked from a parameter); several such are refused
        held = keras_models.holders(a, model)
        found = [c for c in compiles if held & keras_models.holders(a, receiver(c))]
    if len(found) != 1:
        raise ctx.unsupported(call, f"{a.code(model)}.train_on_batch: {a.code(model)} is compiled "
                                    f"{'nowhere tfdist can see' if not found else f'{len(found)} times'}, so its "
                                    "optimizer (the one to distribute) is unknown")
    return found[0]


def refuse_fit_too(ctx, tob: List[cst.Call]) -> None:
    """A model both fit() and stepped with train_on_batch: the two take
    different learning-rate and batch conventions here; not converted."""
    a = ctx.a
    stepped = {model_key(a, receiver(c)) for c in tob}
    for c in keras_models.model_calls(a, apis.KERAS_FIT_METHODS):
        if model_key(a, receiver(c)) in stepped:
            raise ctx.unsupported(c, f"{a.code(receiver(c))} is trained both by {method_name(c)}() and by "
                                     "train_on_batch: not converted (use one of them)")


def _statement_line(ctx, call: cst.Call):
    a = ctx.a
    stmt = a.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if small is None or isinstance(small, cst.Return):
        raise ctx.unsupported(call, f"{a.code(call.func)}(...) is not a statement of its own: the broadcast of the "
                                    "initial state after its first step has nowhere to go")
    return stmt


# ------------------------------------------------------------------ Horovod
def apply_horovod(ctx, tob: List[cst.Call]) -> None:
    a = ctx.a
    refuse_fit_too(ctx, tob)
    optimizers = {}
    for key, sites in by_model(a, tob).items():
        comp = compile_of(ctx, sites[0])
        arg = find_arg(comp, "optimizer", 0)
        built = keras_models.optimizer_constructions(a, arg.value, 0) if arg is not None and not isinstance(
            arg.value, cst.SimpleString) else None
        for c, _ in built or []:
            other = optimizers.setdefault(id(c), key)
            if other != key:
                raise ctx.unsupported(comp, f"{a.code(receiver(comp))} is compiled with the optimizer built at line "
                                            f"{a.line(c)}, which another model stepped by train_on_batch also uses: "
                                            "its step count cannot tell when each model's first step happened (the "
                                            "initial state is broadcast then); give each model its own optimizer")
        legacy = any(t.name in apis.KERAS_LEGACY_OPTIMIZERS for c, t in built or [])
        model = a.code(receiver(sites[0]))
        # sites side by side in one block run in source order: the first one takes the broadcast
        blocks = {id(a.parent(_statement_line(ctx, c))) for c in sites}
        for call in (sites[:1] if len(blocks) == 1 else sites):
            stmt = _statement_line(ctx, call)
            opt = f"{model}.optimizer"
            code = ctx.backend.broadcast_after_first_step(
                opt, [f"{model}.variables"], f"{opt}.variables()" if legacy else f"{opt}.variables")
            ctx.plan.insert_after(stmt, ctx.stmts(code, comment=ctx.say(
                "{engine}: broadcast initial state from rank 0 once, after {model}'s first train_on_batch "
                "created its optimizer's slots.", model=model)))
            ctx.change(call, "broadcast", f"{model}'s variables and optimizer state broadcast from rank 0 after "
                                          "its first train_on_batch")
    _refuse_seeded_generators(ctx, tob)
    tape_loops.divide_loops(ctx, {id(c) for c in tob})
    _seed_global_numpy(ctx, tob)
    for call in tob:
        step_division.warn_single_steps(ctx, [call], f"{a.code(call.func)}(...)")


def _refuse_seeded_generators(ctx, tob: List[cst.Call]) -> None:
    """A batch drawn from a seeded NumPy generator object (``rng =
    np.random.default_rng(0)``) would be the same on every rank."""
    a = ctx.a
    seeds = [c for c in a.calls if a.names(c) & apis.TF_GLOBAL_SEED_SETTERS]
    for loop in step_loops(a, tob):
        for c in calls_in(loop.body):
            if seeds and any(n.startswith("tensorflow.random.") for n in a.names(c)):
                raise ctx.unsupported(c, ctx.say(
                    "{call}(...) draws from TensorFlow's global generator, seeded at line {line}: every rank would "
                    "draw the same batch; draw it from NumPy (re-seeded by rank) or seed TensorFlow with + {rank}",
                    call=a.code(c.func), line=str(a.line(seeds[0]))))
            recv = receiver(c) if isinstance(c.func, cst.Attribute) else None
            if not isinstance(recv, cst.Name):
                continue
            for _, value in a.assigned_values(recv):
                if isinstance(value, cst.Call) and a.names(value) & NUMPY_GENERATORS and value.args:
                    raise ctx.unsupported(c, ctx.say(
                        "{call}(...) draws from the NumPy generator {name} seeded at line {line}: every rank would "
                        "draw the same rows; seed it differently on each rank (e.g. + {rank}) or draw from "
                        "np.random", call=a.code(c.func), name=recv.value, line=str(a.line(value))))


def _seed_global_numpy(ctx, tob: List[cst.Call]) -> None:
    """Batches (or noise) drawn from NumPy's global generator: re-seeded by
    rank before the loop, so a seeded script does not hand every rank the
    same rows."""
    a = ctx.a
    for loop in step_loops(a, tob):
        draws = [c for c in calls_in(loop.body) if a.names(c) & apis.NUMPY_GLOBAL_RANDOM]
        if not draws:
            continue
        stmt = a.statement_of(loop) or loop
        done = ctx.state("train_on_batch.seeded")
        if id(stmt) in done:
            continue
        done.add(id(stmt))
        per_rank_draws.seed_numpy_before(ctx, stmt)
        ctx.change(draws[0], shard_points.RULE, ctx.say(
            "the loop at line {line} draws its batches from NumPy's global generator: re-seeded by rank before "
            "it, so each rank draws its own", line=str(a.line(loop))))


def apply_replicated(ctx, tob: List[cst.Call], scope_model) -> None:
    a = ctx.a
    if ctx.facts.get("keras_flavor") == "keras":
        raise ctx.unsupported(tob[0], KERAS3_REFUSAL)
    refuse_fit_too(ctx, tob)
    # every worker runs each of the original's steps, on its part of the batch (for tfdist verify)
    ctx.facts["full_batch"] = True
    compiles = keras_models.model_calls(a, {"compile"})
    stmts: list = []
    models = []
    for key, sites in by_model(a, tob).items():
        compile_of(ctx, sites[0])
        scope_model(ctx, sites[0], compiles, stmts)
        models.append(a.code(receiver(sites[0])))
        for call in sites:
            ctx.change(call, shard_points.RULE, ctx.say(
                "{call}(...): {engine} splits the batch it is given between the replicas (each worker keeps its "
                "own part): the batch stays the global batch, learning rate and step count kept",
                call=a.code(call.func)))
    if stmts:
        replicas.in_replica_scope(ctx, stmts, f"model{'s' if len(models) > 1 else ''} {', '.join(models)}, "
                                             "their optimizers and compile()" if len(models) > 1 else
                                  f"model {models[0]}, its optimizer and compile()")


def stepped_compiles(ctx, tob: List[cst.Call]) -> set:
    """ids of the compile() calls of the models train_on_batch steps."""
    return {id(compile_of(ctx, c)) for c in tob}
