"""The rules: one module per rule, each a registered ``Rule`` class with its
id, description, engines, finding kinds and example (``tfdist rules`` lists
them; ``tfdist rules ID`` shows one).

Rules import facts (``tfdist.facts``: read-only questions about a program),
shared edits (``tfdist.actions``), the engine and the backend interface,
never each other (an import-linter contract in pyproject.toml). Importing
this package registers every rule; each engine's pipeline runs the rules
that name it, in their ``order``.
"""
from ..engine.rule import REGISTRY, rules_for
from . import (compiled_losses, environment_loops, gradient_tape, held_inputs, keras_fit, layer_seeds,  # noqa: F401
               monitored_session, parameter_server_fit, parameter_server_tape, rank0_io,
               refuse_tf1_monitored_session, refuse_tf1_session, replica_fit, replica_tape, session, setup, trackers,
               warmup, worker_reads)

# The pipeline's rules, in the order they apply: pattern rules, cross-cutting
# rules, setup last (it places the imports and start-up code the others asked for).
DEFAULT_RULES = rules_for("horovod")

# The rules for engines that replicate variables (tf.distribute): pattern
# rules that build state in the replication scope and run steps on every
# replica; TF1 refused; the same cross-cutting rules and setup.
REPLICATED_RULES = rules_for("tf-distribute")

# tf-distribute --strategy parameter-server (tf.distribute's
# ParameterServerStrategy): Keras fit() coordinated by the chief, tape loops
# and TF1 refused, then setup.
PARAMETER_SERVER_RULES = rules_for("parameter-server")

__all__ = ["REGISTRY", "DEFAULT_RULES", "REPLICATED_RULES", "PARAMETER_SERVER_RULES"]
