"""Rewrite rules: one module per training pattern, one per cross-cutting concern.

Pattern rules expose ``PATTERN``, ``detect(analysis) -> [Evidence]`` and
``apply(ctx)``; cross-cutting rules expose ``apply(ctx)``; any rule may
expose ``prepare(ctx)``, run for every rule before any applies (see
``tfdist.engine.pipeline``). Helpers shared by several rules
(learning-rate scaling, data division) are modules the rules call.
"""
from . import (gradient_tape, keras_fit, monitored_session, rank0_io, refuse_tf1, replica_fit, replica_tape,
               session, setup, trackers, warmup)

# Order matters only for readability of the report: each rule records its
# edits independently and the engine applies them in one pass.
PATTERN_RULES = {
    keras_fit.PATTERN: keras_fit,
    gradient_tape.PATTERN: gradient_tape,
    session.PATTERN: session,
    monitored_session.PATTERN: monitored_session,
}
CROSS_CUTTING_RULES = (rank0_io, trackers, warmup)
SETUP_RULE = setup  # last: it places the imports and start-up code the others asked for

# The pipeline's rules, in the order they apply.
DEFAULT_RULES = (*PATTERN_RULES.values(), *CROSS_CUTTING_RULES, SETUP_RULE)

# The rules for engines that replicate variables (tf.distribute): the same
# cross-cutting rules and setup, pattern rules that build state in the
# replication scope and run steps on every replica; TF1 refused.
REPLICATED_RULES = (replica_fit, replica_tape, refuse_tf1.SESSION, refuse_tf1.MONITORED_SESSION,
                    *CROSS_CUTTING_RULES, SETUP_RULE)
