"""The options of one conversion, as one value.

``tfdist convert`` (and ``run`` / ``verify`` / ``job`` where they convert)
builds one :class:`Options` from its command line; it is validated once,
here, and handed as it is to the pipelines (which are cached per Options:
it is frozen and hashable) and to the worker processes of a tree (it
pickles). The backends are constructed from it with keyword arguments
(:meth:`Options.backend_kwargs`), and the rules read those through
``ctx.backend``.

This module imports nothing of tfdist: every layer may use it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Union

#: The engines a conversion can target, and ``auto``: chosen per file
#: (see :mod:`tfdist.engine_choice`).
HOROVOD = "horovod"
TF_DISTRIBUTE = "tf-distribute"
AUTO = "auto"
ENGINES = (HOROVOD, TF_DISTRIBUTE)
BACKEND_CHOICES = (AUTO, *ENGINES)

#: --strategy (tf-distribute): data-parallel replicas (MirroredStrategy /
#: MultiWorkerMirroredStrategy, the default) or parameter servers
#: (ParameterServerStrategy: a chief coordinating, workers computing
#: asynchronously, variables on the parameter servers). The pipeline of the
#: latter is its own engine, named PARAMETER_SERVER.
MIRRORED = "mirrored"
PARAMETER_SERVER = "parameter-server"
STRATEGIES = (MIRRORED, PARAMETER_SERVER)

#: --lr-scaling: how the learning rate follows the number of processes N
#: (linear: x N, Horovod's and Goyal et al.'s rule; sqrt: x sqrt(N), for
#: adaptive optimizers and large batches; none: as written).
LR_POLICIES = ("linear", "sqrt", "none")


class OptionsError(ValueError):
    """Options that do not go together, or a value out of range; the message
    names the command-line options involved."""


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_lr_scaling(policy) -> str:
    if policy not in LR_POLICIES:
        raise OptionsError(f"unknown learning-rate scaling {policy!r} (--lr-scaling: {', '.join(LR_POLICIES)})")
    return policy


def check_warmup(warmup_epochs, policy: str) -> Optional[int]:
    """--warmup-epochs K: None (no warmup) or a whole number >= 1, and only
    where the rate is scaled (warming up to the rate as written is no warmup)."""
    if warmup_epochs is None:
        return None
    if not _whole(warmup_epochs) or warmup_epochs < 1:
        raise OptionsError(f"--warmup-epochs needs a whole number of epochs >= 1, not {warmup_epochs!r}")
    if policy == "none":
        raise OptionsError("--warmup-epochs ramps the learning rate up to the scaled rate; with --lr-scaling none "
                           "nothing is scaled, so there is nothing to warm up to (use --lr-scaling linear or sqrt)")
    return warmup_epochs


def check_steps_per_epoch(steps, warmup_epochs) -> Optional[int]:
    """--steps-per-epoch S: the original (single-process) script's optimizer
    steps in one epoch, for a warmup of a training loop whose epoch the
    converter cannot see; only with --warmup-epochs."""
    if steps is None:
        return None
    if not _whole(steps) or steps < 1 or warmup_epochs is None:
        alone = "--steps-per-epoch alone" if _whole(steps) and steps >= 1 else f"S = {steps!r}"
        raise OptionsError(f"--steps-per-epoch S (S >= 1) is the epoch length of --warmup-epochs K: use both, not {alone}")
    return steps


#: The backend keyword arguments and their defaults (what a backend is built
#: with when an option is not given).
_BACKEND_DEFAULTS = {"lr_scaling": "linear", "warmup_epochs": None, "steps_per_epoch": None, "fault_tolerant": False,
                     "min_shard_bytes": None}


def check_strategy(options: "Options") -> None:
    """--strategy parameter-server goes with tf-distribute (or auto, which it
    decides), and without the options of synchronous replicas; --ps-min-shard-bytes
    only with it."""
    if options.strategy not in STRATEGIES:
        raise OptionsError(f"unknown strategy {options.strategy!r} (--strategy: {', '.join(STRATEGIES)})")
    if options.strategy != PARAMETER_SERVER:
        if options.min_shard_bytes is not None:
            raise OptionsError("--ps-min-shard-bytes goes with --strategy parameter-server")
        return
    if options.backend == HOROVOD:
        raise OptionsError("--strategy parameter-server is tf.distribute's ParameterServerStrategy: "
                           "use --backend tf-distribute")
    for given, option in ((options.fault_tolerant, "--fault-tolerant"), (options.warmup_epochs, "--warmup-epochs"),
                          (options.lr_scaling != "linear", "--lr-scaling")):
        if given:
            raise OptionsError(f"{option} is not for --strategy parameter-server: each worker applies its own "
                               "batch's gradients to the parameter servers as written (asynchronous training), "
                               "so the learning rate is kept as written")
    if options.min_shard_bytes is not None and (not _whole(options.min_shard_bytes) or options.min_shard_bytes < 1):
        raise OptionsError(f"--ps-min-shard-bytes needs a whole number of bytes >= 1, not {options.min_shard_bytes!r}")


@dataclass(frozen=True)
class Options:
    """How to convert: the engine and its options.

    ``backend``: ``horovod``, ``tf-distribute``, or ``auto`` (chosen per
    file from its code and the installed TensorFlow: :mod:`tfdist.engine_choice`).
    ``lr_scaling``: linear, sqrt or none (--lr-scaling).
    ``warmup_epochs``: K epochs of gradual warmup, or None (--warmup-epochs).
    ``steps_per_epoch``: the original's steps per epoch for that warmup, or
    None (--steps-per-epoch).
    ``fault_tolerant``: tf-distribute's Keras BackupAndRestore (--fault-tolerant).
    ``strategy``: tf-distribute's strategy, mirrored or parameter-server (--strategy).
    ``min_shard_bytes``: parameter-server: the smallest shard a variable is split
    into across the parameter servers, or None for the default (--ps-min-shard-bytes).
    """

    backend: str = AUTO
    lr_scaling: str = "linear"
    warmup_epochs: Optional[int] = None
    steps_per_epoch: Optional[int] = None
    fault_tolerant: bool = False
    strategy: str = MIRRORED
    min_shard_bytes: Optional[int] = None

    def __post_init__(self):
        if self.backend not in BACKEND_CHOICES:
            raise OptionsError(f"unknown backend {self.backend!r} (available: {', '.join(BACKEND_CHOICES)})")
        check_lr_scaling(self.lr_scaling)
        check_warmup(self.warmup_epochs, self.lr_scaling)
        check_steps_per_epoch(self.steps_per_epoch, self.warmup_epochs)
        if not isinstance(self.fault_tolerant, bool):
            raise OptionsError(f"fault_tolerant is True or False, not {self.fault_tolerant!r}")
        if self.fault_tolerant and self.backend == HOROVOD:
            raise OptionsError("--fault-tolerant needs --backend tf-distribute (Keras BackupAndRestore under "
                               "tf.distribute)")
        check_strategy(self)

    @classmethod
    def of(cls, value: Union["Options", str, None]) -> "Options":
        """An Options as it is; a bare backend name (``"horovod"``) as the
        Options of that engine with the default policy; None as the default."""
        if value is None:
            return cls()
        if isinstance(value, Options):
            return value
        if isinstance(value, str):  # parameter-server: the engine of tf-distribute --strategy parameter-server
            return cls(backend=TF_DISTRIBUTE, strategy=PARAMETER_SERVER) if value == PARAMETER_SERVER else cls(backend=value)
        raise TypeError(f"options must be an Options or a backend name, not {type(value).__name__}")

    def with_backend(self, backend: str) -> "Options":
        """The same options for another engine (what ``auto`` chose)."""
        return dataclasses.replace(self, backend=backend)

    @property
    def engine(self) -> str:
        """The pipeline these options build: the backend, or ``parameter-server``
        (tf-distribute with --strategy parameter-server)."""
        return PARAMETER_SERVER if self.strategy == PARAMETER_SERVER and self.chosen else self.backend

    @property
    def chosen(self) -> bool:
        """The engine is known (not ``auto``)."""
        return self.backend != AUTO

    def backend_kwargs(self) -> dict:
        """The keyword arguments of the backend's constructor: the options that
        differ from their defaults (a backend takes only those it knows)."""
        return {n: getattr(self, n) for n, default in _BACKEND_DEFAULTS.items() if getattr(self, n) != default}

    def describe(self) -> str:
        """The command-line spelling of these options (for messages)."""
        words = [f"--backend {self.backend}"]
        if self.lr_scaling != "linear":
            words.append(f"--lr-scaling {self.lr_scaling}")
        if self.warmup_epochs is not None:
            words.append(f"--warmup-epochs {self.warmup_epochs}")
        if self.steps_per_epoch is not None:
            words.append(f"--steps-per-epoch {self.steps_per_epoch}")
        if self.fault_tolerant:
            words.append("--fault-tolerant")
        if self.strategy != MIRRORED:
            words.append(f"--strategy {self.strategy}")
        if self.min_shard_bytes is not None:
            words.append(f"--ps-min-shard-bytes {self.min_shard_bytes}")
        return " ".join(words)


OptionsOrName = Union[Options, str]
