"""Facts: read-only questions about a program, one module per question.

Where a dataset comes from and where it flows (``dataset_flow``,
``repeats``, ``keras_inputs``), which arrays are rows of data and where they
are final (``array_reads``, ``fed_arrays``, ``shard_points``), what builds a
model or an optimizer (``keras_models``), a loss and with what reduction
(``losses``), which draws are random and how they are seeded (``samplers``,
``seeding``, ``unseeded_orders``, ``step_orders``), which calls write files
(``writes``) or run collectives (``collectives``), how many steps a loop runs
(``step_counts``), what a TF1 graph holds (``sessions``, ``monitored_sessions``,
``tf1_graphs``), what a tape loop or a ``train_step`` does (``gradient_tapes``,
``train_steps``, ``batch_steps``), what the replication scope must hold
(``replica_state``), learning rates and warmups (``learning_rates``,
``warmups``); ``syntax`` holds the small questions about one node every fact
asks, ``kinds`` the names of the findings.

A fact makes no edit: it imports the engine (``tfdist.engine``) and other
facts, never an action or a rule (import-linter contracts in pyproject.toml).
Every public question asked about a module (``question(a, ...)``) is an
``@fact`` (``tfdist.engine.memo``): answered once per module and arguments,
kept on the Analysis, whichever rule asks (tests/fast/test_facts_cached.py).
"""
