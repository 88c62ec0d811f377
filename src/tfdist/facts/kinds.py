"""The kinds of findings a conversion reports (the ``rule`` of each change
and warning in the report), by the concern they belong to."""
from __future__ import annotations


DATA_DIVISION = "data-division"
GRADIENT_TAPE = "gradient-tape"
KERAS = "keras"
LR_SCALING = "lr-scaling"
LR_WARMUP = "lr-warmup"
MONITORED_SESSION = "monitored-session"
PER_REPLICA_BATCH = "per-replica-batch"
RANK0_IO = "rank0-io"
REPLICA_SCOPE = "replica-scope"
SESSION = "session"
SETUP = "setup"
