"""Actions: edits more than one rule makes, one module per kind of edit.

Dividing the data (``sharding``, ``repeated_shards``, ``iterator_shards``,
``keras_input_shards``, ``per_rank_draws``, ``step_division``), scaling and
warming up the learning rate (``learning_rate``, ``warmup_edits``,
``keras_optimizers``), wrapping tapes and their loops (``tape_loops``), TF1
graphs (``tf1_edits``), the replication scope and per-replica batches
(``replicas``, ``replica_train_step``, ``loss_shares``), ``train_on_batch``
steps, rank guards (``guards``), keyword arguments (``keywords``) and the
refusal of a pattern an engine cannot run (``refusals``).

An action reads facts and edits through the context it is given; it imports
facts, other actions and the engine, never a rule (import-linter contracts
in pyproject.toml).
"""
