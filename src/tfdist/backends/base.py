"""The interface every backend implements.

Each method returns a *template*: Python source with ``{placeholders}`` that
the engine fills (``{hvd}``, ``{tf}`` become the names bound in the user's
file; other placeholders are the user's own expressions, as source) and
parses with the file's formatting conventions.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Dict, List, Tuple


#: --lr-scaling: how the learning rate follows the number of processes N
#: (linear: x N, Horovod's and Goyal et al.'s rule; sqrt: x sqrt(N), for
#: adaptive optimizers and large batches; none: as written).
LR_POLICIES = ("linear", "sqrt", "none")


def check_lr_policy(policy: str) -> str:
    if policy not in LR_POLICIES:
        raise ValueError(f"unknown learning-rate scaling {policy!r} (available: {', '.join(LR_POLICIES)})")
    return policy


def scaled_lr(policy: str, lr: str, size: str):
    """The learning rate ``lr`` under a policy, with ``size`` the engine's
    number of processes; None when the rate stays as written."""
    if policy == "linear":
        return f"{lr} * {size}"
    if policy == "sqrt":
        return f"{lr} * {size} ** 0.5"
    return None


class Backend(ABC):
    name: str
    #: Keras evaluate()/predict() run collective operations under this engine
    #: (so they may never be put under a rank guard).
    inference_runs_collectives: bool = False

    # --- what the engine and the rules need to know of the backend's words
    @abstractmethod
    def placeholder_names(self) -> Tuple[str, ...]:
        """The ``{placeholders}`` its templates use for names bound in the
        user's file (each resolved through :meth:`bind_name`)."""

    @abstractmethod
    def message_words(self) -> Dict[str, str]:
        """How messages to the user name the engine's facts: ``engine`` (its
        name), ``rank``, ``size``, ``local_rank`` (expressions as the user
        would write them) and ``chief`` (the test for the process that
        writes files), ``broadcast_op`` (the TF1 op broadcasting initial
        variables, as the user would write it), ``optimizer_wrapper``,
        ``tape_wrapper`` and ``broadcast_hook`` (what the backend wraps
        optimizers and tapes in, and adds to TF1 hooks) and
        ``tf1_optimizer_in_keras`` (why a TF1 optimizer given to Keras
        ``compile`` cannot be distributed). Rules write messages as templates
        over these keys (``ctx.say``)."""

    @abstractmethod
    def estimator_refusal(self) -> str:
        """Why tf.estimator training is refused, and what to do instead."""

    @abstractmethod
    def implicit_gradients_refusal(self, function: str) -> str:
        """Why TF1 eager training with ``function(...)`` is refused."""

    @abstractmethod
    def bind_name(self, ctx, key: str) -> str:
        """The name to use for a template placeholder, scheduling its import."""

    # --- process topology
    @abstractmethod
    def size(self) -> str: ...

    @abstractmethod
    def rank(self) -> str: ...

    @abstractmethod
    def is_chief(self) -> str:
        """A boolean expression: this process writes files and prints."""

    # --- start-up
    @abstractmethod
    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List[str]:
        """Statements (templates) run once, right after the imports."""

    # --- optimisation
    lr_scaling: str = "linear"

    @abstractmethod
    def scale_lr(self, lr: str):
        """The learning rate under this backend's --lr-scaling policy, or None
        when it stays as written."""

    @abstractmethod
    def wrap_optimizer(self, optimizer: str, keras: bool) -> str: ...

    @abstractmethod
    def wrap_tape(self, tape: str) -> str: ...

    @abstractmethod
    def broadcast_after_first_step(self, optimizer: str, variables: List[str], optimizer_vars: str) -> str: ...

    @abstractmethod
    def tf1_broadcast_op(self) -> str: ...

    @abstractmethod
    def tf1_broadcast_hook(self) -> str: ...

    @abstractmethod
    def keras_callbacks(self) -> List[str]:
        """Callbacks every rank runs, first in the list."""

    # --- data
    @abstractmethod
    def shard_dataset(self, dataset: str) -> str: ...

    @abstractmethod
    def shard_dataset_known_size(self, dataset: str) -> str:
        """Shard a dataset whose cardinality is known, equal share per rank."""

    @abstractmethod
    def shard_files(self, dataset: str) -> str:
        """Shard a dataset of file names by file (nothing dropped)."""

    @abstractmethod
    def shard_array(self, array: str) -> str: ...

    @abstractmethod
    def divide_count(self, count: str) -> str: ...

    @abstractmethod
    def tf1_device_config(self, tf1: str) -> str:
        """A ConfigProto expression pinning this process's GPU."""

    @abstractmethod
    def tf1_visible_device_list(self) -> str: ...

    # --- data sources beyond tf.data (additive: not abstract, so other
    # backends keep working until they implement them)
    def rank_strided_sequence(self, name: str, base: str) -> str:
        """A class statement: a Sequence wrapper reading a disjoint, equal share per rank."""
        raise NotImplementedError

    def seed_per_rank(self, seed: str) -> str:
        """A seed that differs on every rank (one random stream per rank)."""
        raise NotImplementedError

    # --- saving (additive)
    def worker_write_path(self, path: str):
        """Where this process writes a checkpoint or saved model at ``path``
        when every process must save (saving may run collective operations
        under the engine); None when saving is done on rank 0 only."""
        return None

    # --- samplers
    def keep_own_draw(self, draw: str, batch: str) -> str:
        """A loop drawing one batch per rank ({call}) and keeping this rank's in {target}."""
        raise NotImplementedError

    # --- endless inputs (rules/data_division.shard_repeated)
    def shard_dataset_plain(self, dataset: str) -> str:
        """Shard a finite dataset that is then repeated forever: every rank
        runs the same (divided) steps_per_epoch, so shares need not be equal."""
        raise NotImplementedError
