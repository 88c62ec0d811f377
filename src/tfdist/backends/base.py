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


def check_warmup(warmup_epochs, policy: str):
    """--warmup-epochs K: None (no warmup) or a whole number >= 1, and only
    where the rate is scaled (warming up to the rate as written is no warmup)."""
    if warmup_epochs is None:
        return None
    if isinstance(warmup_epochs, bool) or not isinstance(warmup_epochs, int) or warmup_epochs < 1:
        raise ValueError(f"the warmup needs a whole number of epochs >= 1, not {warmup_epochs!r}")
    if policy == "none":
        raise ValueError("a learning-rate warmup ramps up to the scaled rate: it needs --lr-scaling linear or sqrt, "
                         "not none")
    return warmup_epochs


def lr_factor(policy: str, size: str) -> str:
    """The scaled rate over the original one (an expression), for a scaling policy."""
    return size if policy == "linear" else f"{size} ** 0.5"


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
    #: --warmup-epochs: epochs over which the rate ramps from the original to
    #: the scaled one (Goyal et al. 2017), None for no warmup.
    warmup_epochs = None

    def keras_warmup_callback(self, ctx, model=None):
        """(callback template, class template or None): the Keras callback
        ramping the rate of fit() over ``self.warmup_epochs`` epochs, and the
        class it needs emitted into the script. ``model`` is the source of
        the fit() receiver when it is a plain name (None otherwise)."""
        keras = "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"
        name = ctx.imports.free_name("LearningRateWarmup")
        factor = lr_factor(self.lr_scaling, self.size())
        return f"{name}({self.warmup_epochs}, {factor})", warmup_callback_class(name, keras, ctx.quoted)

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


def warmup_callback_class(name: str, keras: str, quoted) -> str:
    """A Keras callback ramping the rate linearly per step from the original
    (single-process) rate to the scaled one the optimizer was built with,
    over the first ``epochs`` epochs (Goyal et al. 2017, gradual warmup).
    Emitted into the converted script: it needs nothing but Keras."""
    return (
        f"class {name}({keras}.callbacks.Callback):\n"
        f"    \"\"\"Gradual warmup (Goyal et al. 2017): the learning rate rises linearly, step by step, from\n"
        f"    the single-process rate to the scaled one over the first `epochs` epochs.\"\"\"\n"
        f"\n"
        f"    def __init__(self, epochs, factor):\n"
        f"        super().__init__()\n"
        f"        self.epochs = epochs\n"
        f"        self.factor = factor  # scaled rate / single-process rate\n"
        f"        self.step = 0\n"
        f"        self.target = None\n"
        f"\n"
        f"    def on_train_begin(self, logs=None):\n"
        f"        if self.target is None:  # the scaled rate the optimizer was built with\n"
        f"            self.target = float(self.model.optimizer.learning_rate.numpy())\n"
        f"\n"
        f"    def on_train_batch_begin(self, batch, logs=None):\n"
        f"        steps = self.params.get({quoted('steps')})\n"
        f"        if not steps:\n"
        f"            raise ValueError({quoted('learning-rate warmup: fit() does not know its steps per epoch; pass steps_per_epoch')})\n"
        f"        total = self.epochs * steps\n"
        f"        if self.step <= total:\n"
        f"            start = self.target / self.factor\n"
        f"            self.model.optimizer.learning_rate = start + (self.target - start) * self.step / total\n"
        f"        self.step += 1\n"
    )
