"""The interface every backend implements.

Each method returns a *template*: Python source with ``{placeholders}`` that
the engine fills (``{hvd}``, ``{tf}`` become the names bound in the user's
file; other placeholders are the user's own expressions, as source) and
parses with the file's formatting conventions.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Dict, List, Optional, Tuple

# The options are validated by tfdist.options (once, when an Options is
# built); a backend built directly, with keyword arguments, checks them with
# the same functions.
from ..options import LR_POLICIES  # noqa: F401
from ..options import check_lr_scaling as check_lr_policy  # noqa: F401
from ..options import check_steps_per_epoch, check_warmup  # noqa: F401


def scaled_lr(policy: str, lr: str, size: str):
    """The learning rate ``lr`` under a policy, with ``size`` the engine's
    number of processes; None when the rate stays as written."""
    if policy == "linear":
        return f"{lr} * {size}"
    if policy == "sqrt":
        return f"{lr} * {size} ** 0.5"
    return None


def lr_factor(policy: str, size: str) -> str:
    """The scaled rate over the original one (an expression), for a scaling policy."""
    return size if policy == "linear" else f"{size} ** 0.5"



def digest_lines(indent: str, parts: str) -> str:
    """Emitted lines adding the parts of a batch (``parts``: an expression of
    them; ``{tf}`` filled later) to ``digest`` (a hashlib object): arrays by
    their bytes, other values by their text unless it names a memory address
    -- what the engines' stream checks compare between processes."""
    return (
        f"{indent}for part in {{tf}}.nest.flatten({parts}):\n"
        f"{indent}    try:\n"
        f"{indent}        value = numpy.asarray(part)\n"
        f"{indent}        digest.update(value.tobytes() if value.dtype != object else repr(value.tolist()).encode())\n"
        f"{indent}    except Exception:  # not an array: its text, unless that names where it is in memory\n"
        f"{indent}        digest.update(b\"\" if \" at 0x\" in repr(part) else repr(part).encode())\n")

class Backend(ABC):
    name: str
    #: Keras evaluate()/predict() run collective operations under this engine
    #: (so they may never be put under a rank guard).
    inference_runs_collectives: bool = False
    #: A dataset sharded by this engine's templates holds only this rank's
    #: share wherever it is read (Horovod's .shard), not only where the
    #: engine distributes it (tf.distribute's auto-shard options): any other
    #: reader downstream of the shard -- a preprocessing layer's adapt() --
    #: sees the share too.
    shard_is_in_place: bool = False

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
    def tuner_warning(self, tuner: str) -> str:
        """What a Keras Tuner search beside converted training needs by hand."""

    @abstractmethod
    def sklearn_wrapper_warning(self, wrapper: str, handed_on: bool) -> "str | None":
        """What goes wrong when a scikit-learn wrapper (KerasClassifier)
        trains models beside converted training, and what to do; None when
        nothing does. ``handed_on``: scikit-learn trains the wrapper itself
        (cross_val_score, GridSearchCV), rather than the script calling its
        fit()."""

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

    def is_not_chief(self) -> str:
        """A boolean expression: this process neither writes files nor prints."""
        return f"not ({self.is_chief()})"

    @abstractmethod
    def barrier(self, tf1: Optional[str] = None) -> str:
        """A statement every process runs that returns only once all have
        reached it: the others wait there for a file the chief writes just
        before. ``tf1``: the TF1 namespace (``tf.compat.v1``) of a script in
        graph mode, where an op only runs in a session."""

    # --- start-up
    @abstractmethod
    def setup(self, ctx, tf2: bool, keras3_guard: bool) -> List[str]:
        """Statements (templates) run once, right after the imports."""

    # --- optimisation
    lr_scaling: str = "linear"
    #: --warmup-epochs: epochs over which the rate ramps from the original to
    #: the scaled one (Goyal et al. 2017), None for no warmup.
    warmup_epochs = None
    #: --steps-per-epoch: the original script's optimizer steps per epoch,
    #: where a training loop's epoch is not visible to the converter.
    steps_per_epoch = None

    def keras_warmup_callback(self, ctx, model=None):
        """(callback template, class template or None): the Keras callback
        ramping the rate of fit() over ``self.warmup_epochs`` epochs, and the
        class it needs emitted into the script. ``model`` is the source of
        the fit() receiver when it is a plain name (None otherwise)."""
        keras = "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"
        name = ctx.imports.free_name("LearningRateWarmup")
        factor = lr_factor(self.lr_scaling, self.size())
        return f"{name}({self.warmup_epochs}, {factor})", warmup_callback_class(name, keras, ctx.quoted)

    def warmup_schedule(self, ctx, keras: str):
        """(class name, class template): a Keras ``LearningRateSchedule``
        around the scaled rate (a number or the script's own schedule) that
        warms it up over ``self.warmup_epochs`` epochs of this process's
        steps, for training loops that apply gradients themselves. Its
        ``steps_per_epoch`` is this process's share of --steps-per-epoch,
        or None: then the rule sets it before the training loop."""
        name = ctx.imports.free_name("LearningRateWarmupSchedule")
        steps = self.divide_count(str(self.steps_per_epoch)) if self.steps_per_epoch else "None"
        return name, warmup_schedule_class(name, keras, steps, ctx.quoted)

    def scale_lr_at_run_time(self, ctx, keras: str):
        """(call template over ``{inner}``, definitions template): the
        optimizer ``{inner}`` with its learning rate scaled under this
        backend's policy once, at run time, for an optimizer built where the
        converter cannot see (another module, a tuner's choice, a name
        string); None under --lr-scaling none."""
        if self.lr_scaling == "none":
            return None
        function = ctx.imports.free_name("with_scaled_learning_rate")
        schedule, class_definition = self.scaled_schedule(ctx, keras)
        factor = lr_factor(self.lr_scaling, self.size())
        return (f"{function}({{inner}}, {factor})",
                (class_definition + "\n\n" if class_definition else "")
                + scaled_rate_definitions(function, schedule, keras, ctx.quoted))

    def scaled_schedule(self, ctx, keras: str):
        """(name, definition -- None once written) of the schedule class
        wrapping a schedule the script made: its rates times ``factor``, read
        ``steps`` times as far along (each process takes 1/N of the steps)."""
        memo = ctx.state("tfdist.backends.scaled_schedule", dict)
        if "name" in memo:
            return memo["name"], None
        memo["name"] = ctx.imports.free_name("ScaledLearningRate")
        return memo["name"], scaled_schedule_class(memo["name"], keras, ctx.quoted)

    def scale_user_schedule(self, ctx, keras: str):
        """(call template over ``{inner}``, class definition or None): a
        learning-rate schedule class of the script's own, at this policy's
        factor times its rate and N times as far along its steps -- what
        scaling the rate and dividing the step counts does to a Keras
        schedule, for one whose code tfdist does not rewrite."""
        schedule, definition = self.scaled_schedule(ctx, keras)
        factor = "1" if self.lr_scaling == "none" else lr_factor(self.lr_scaling, self.size())
        return f"{schedule}({{inner}}, {factor}, steps={self.size()})", definition

    def scale_epoch_rates(self, ctx):
        """(call template over ``{inner}``, definitions template): a
        LearningRateScheduler function whose rates are the script's own
        times this policy's factor; None under --lr-scaling none."""
        if self.lr_scaling == "none":
            return None
        function = ctx.imports.free_name("scaled_epoch_rates")
        factor = lr_factor(self.lr_scaling, self.size())
        return f"{function}({{inner}}, {factor})", scaled_epoch_rates_definition(function)

    def warmup_epoch_callback(self, ctx, keras: str, schedule: str):
        """(callback template, class template): a Keras callback telling the
        warmup schedule class ``schedule`` fit()'s steps per epoch."""
        name = ctx.imports.free_name("LearningRateWarmupEpoch")
        return f"{name}()", warmup_epoch_callback_class(name, keras, schedule, ctx.quoted)

    def tf1_warmup(self, ctx):
        """(function name, function template): a TF1 learning-rate tensor
        warmed up from the single-process rate to the scaled one over the
        first ``steps`` values of the global step; used as
        ``name(rate, global_step, factor, steps)``."""
        name = ctx.imports.free_name("learning_rate_warmup")
        return name, tf1_warmup_function(name)

    def warmup_factor(self) -> str:
        """The scaled rate over the single-process one, as an expression."""
        return lr_factor(self.lr_scaling, self.size())

    def warmup_steps(self) -> str:
        """This process's optimizer steps in the warmup, from --steps-per-epoch."""
        return f"{self.warmup_epochs} * {self.divide_count(str(self.steps_per_epoch))}"

    @abstractmethod
    def scale_lr(self, lr: str):
        """The learning rate under this backend's --lr-scaling policy, or None
        when it stays as written."""

    @abstractmethod
    def wrap_optimizer(self, optimizer: str, keras: bool) -> str: ...

    @abstractmethod
    def wrap_tape(self, tape: str) -> str: ...

    @abstractmethod
    def broadcast_after_first_step(self, optimizer: str, variables: List[str], optimizer_vars: str,
                                   applies: int = 1) -> str:
        """Statements broadcasting these variables and the optimizer's state
        from rank 0 exactly once: after the optimizer's ``applies``-th apply
        (its first step, or the last of the ``applies`` it makes in one step)."""

    def broadcast_now(self, variables: str) -> str:
        """Statements setting these variables to rank 0's values, run where they stand."""
        raise NotImplementedError

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

    def shard_in_rounds(self, dataset: str) -> Optional[str]:
        """Shard a dataset of unknown size element by element in whole
        rounds (a helper's batches): equal, disjoint shares per rank whatever
        the elements' shapes; None where the engine has no such cut."""
        return None

    @abstractmethod
    def shard_dataset_known_size(self, dataset: str) -> str:
        """Shard a dataset whose cardinality is known, equal share per rank."""

    def shard_evaluation_known_size(self, dataset: str) -> str:
        """Shard a dataset evaluated (fit's validation data) whose cardinality
        is known: as shard_dataset_known_size, but never into fewer pieces
        than ranks -- a set of fewer elements (batches) than ranks is
        evaluated whole on every rank instead of left empty."""
        return self.shard_dataset_known_size(dataset)

    @abstractmethod
    def shard_files(self, dataset: str) -> str:
        """Shard a dataset of file names by file (nothing dropped)."""

    @abstractmethod
    def shard_array(self, array: str) -> str: ...

    def shard_array_once(self, array: str) -> str:
        """shard_array of an expression that must be evaluated once (a call)."""
        return self.shard_array(array)

    def shard_array_values(self, mapping: str) -> str:
        """shard_array of every array of a dict of a model's inputs, by name."""
        return "{" + f"name: {self.shard_array('rows')} for name, rows in {mapping}.items()" + "}"

    def shard_array_items(self, arrays: str) -> str:
        """shard_array of every array of a list or tuple of a model's inputs."""
        return f"[{self.shard_array('rows')} for rows in {arrays}]"

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

    def rank_share_of_stream(self, ctx, iterable: str) -> str:
        """An iterable yielding this rank's share of ``iterable``'s elements:
        disjoint shares, the same count on every rank, each element as it
        was when the stream handed it out (a generator may refill its arrays)."""
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

    def worker_read_path(self, path: str):
        """Where this process reads back a file it may have written through
        :meth:`worker_write_path`; None when saving is done on rank 0 only."""
        return None

    # --- samplers
    def keep_own_draw(self, draw: str, batch: str) -> str:
        """A loop drawing one batch per rank ({call}) and keeping this rank's in {target}."""
        raise NotImplementedError

    # --- endless inputs (rules/endless_inputs.shard_repeated)
    def shard_dataset_plain(self, dataset: str) -> str:
        """Shard a finite dataset that is then repeated forever: every rank
        runs the same (divided) steps_per_epoch, so shares need not be equal."""
        raise NotImplementedError


def scaled_epoch_rates_definition(function: str) -> str:
    """A LearningRateScheduler function wrapping the script's: Keras calls it
    as it calls any schedule, ``(epoch, rate)``; it calls the script's the
    way Keras would (with the rate, else without: a TypeError means the
    function takes the epoch only), hands it the rate as the single process
    had it, and returns its rate times ``factor`` -- an absolute rate
    (``1e-3 if epoch < 10 else 1e-4``) is scaled, a relative one (``rate *
    0.9``) stays relative to the scaled rate."""
    return (
        f"def {function}(schedule, factor):\n"
        f"    \"\"\"The script's LearningRateScheduler function, its rates multiplied by `factor`.\"\"\"\n"
        f"    def scaled(epoch, rate):\n"
        f"        try:\n"
        f"            new_rate = schedule(epoch, rate / factor)\n"
        f"        except TypeError:\n"
        f"            new_rate = schedule(epoch)\n"
        f"        return new_rate * factor\n"
        f"    return scaled\n"
    )


def scaled_schedule_class(schedule: str, keras: str, quoted) -> str:
    """A learning-rate schedule class around one of the script's: its rates
    multiplied by ``factor``, and evaluated ``steps`` times as far along (a
    process taking 1/N of the steps reaches the original's step s at s/N).
    Horovod's DistributedOptimizer makes its optimizer anew from the
    optimizer's config, which a schedule class of the script's own cannot
    survive unless registered (Keras: "Cannot deserialize object of type
    CustomSchedule", measured on 2 ranks): rebuilt in the process that
    wrote the config, the wrapper hands back the very schedule object;
    elsewhere (a saved model loaded) it deserializes it as Keras would."""
    return (
        f"@{keras}.utils.register_keras_serializable({quoted('tfdist')})\n"
        f"class {schedule}({keras}.optimizers.schedules.LearningRateSchedule):\n"
        f"    \"\"\"The script's own learning-rate schedule, its rates multiplied by `factor`, `steps` times as far along.\"\"\"\n"
        f"\n"
        f"    live = {{}}  # get_config() -> from_config() in this process (an optimizer rebuilt from its config)\n"
        f"\n"
        f"    def __init__(self, schedule, factor, steps=1):\n"
        f"        super().__init__()\n"
        f"        self.schedule = schedule\n"
        f"        self.factor = factor\n"
        f"        self.steps = steps\n"
        f"\n"
        f"    def __call__(self, step):\n"
        f"        return self.schedule(step * self.steps if self.steps != 1 else step) * self.factor\n"
        f"\n"
        f"    def get_config(self):\n"
        f"        {schedule}.live[id(self)] = self\n"
        f"        config = {{{quoted('factor')}: self.factor, {quoted('steps')}: self.steps, {quoted('live')}: id(self)}}\n"
        f"        try:\n"
        f"            config[{quoted('schedule')}] = {keras}.optimizers.schedules.serialize(self.schedule)\n"
        f"        except NotImplementedError:  # a schedule class without get_config()\n"
        f"            pass\n"
        f"        return config\n"
        f"\n"
        f"    @classmethod\n"
        f"    def from_config(cls, config):\n"
        f"        config = dict(config)\n"
        f"        same = cls.live.get(config.pop({quoted('live')}, None))\n"
        f"        if same is not None:  # rebuilt in this process: the very schedule, whatever its class\n"
        f"            return cls(same.schedule, config[{quoted('factor')}], config.get({quoted('steps')}, 1))\n"
        f"        config[{quoted('schedule')}] = {keras}.optimizers.schedules.deserialize(config[{quoted('schedule')}])\n"
        f"        return cls(**config)\n"
    )


def scaled_rate_definitions(function: str, schedule: str, keras: str, quoted) -> str:
    """A function scaling the learning rate of an optimizer object in place,
    once (compiling the same optimizer again must not scale it again), with
    the schedule class ``schedule`` (scaled_schedule_class) around a rate
    that is a schedule. Emitted into the converted script: it needs nothing
    but Keras.

    A name string (``"adam"``, a tuner's choice) is first made the optimizer
    Keras would make of it. Keras 3 and Keras 2's optimizers keep a schedule
    in ``_learning_rate`` (their ``learning_rate`` property evaluates it);
    legacy optimizers return it from ``learning_rate``. A loss-scale wrapper
    forwards its rate to the optimizer it wraps."""
    flag = quoted("_tfdist_learning_rate_scaled")
    return (
        f"def {function}(optimizer, factor):\n"
        f"    \"\"\"`optimizer` (an optimizer or its name) with its learning rate multiplied by `factor`,\n"
        f"    once per optimizer object: compiling it again does not scale it again.\"\"\"\n"
        f"    if isinstance(optimizer, str):\n"
        f"        optimizer = {keras}.optimizers.get(optimizer)\n"
        f"    if optimizer is None or getattr(optimizer, {flag}, False):\n"
        f"        return optimizer\n"
        f"    target = getattr(optimizer, {quoted('inner_optimizer')}, optimizer)  # a loss-scale wrapper's optimizer\n"
        f"    rate = getattr(target, {quoted('_learning_rate')}, None)\n"
        f"    if not isinstance(rate, {keras}.optimizers.schedules.LearningRateSchedule):\n"
        f"        rate = target.learning_rate\n"
        f"    if isinstance(rate, {keras}.optimizers.schedules.LearningRateSchedule):\n"
        f"        target.learning_rate = {schedule}(rate, factor)\n"
        f"    elif callable(rate):\n"
        f"        target.learning_rate = lambda: rate() * factor\n"
        f"    else:\n"
        f"        target.learning_rate = target.learning_rate * factor\n"
        f"    setattr(optimizer, {flag}, True)\n"
        f"    return optimizer\n"
    )


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


def warmup_schedule_class(name: str, keras: str, steps: str, quoted) -> str:
    """A learning-rate schedule ramping linearly per step from the original
    (single-process) rate to the scaled one, or to the scaled schedule of
    the script, over the first ``epochs`` epochs (Goyal et al. 2017).
    Emitted into the converted script: it needs nothing but TensorFlow.

    Keras 2 optimizers call a schedule once when they are built, before any
    step: the rate it then returns is only shown, never trained with.
    Registered and rebuilt from its config: Horovod's DistributedOptimizer
    makes its optimizer anew from the user's optimizer's config.
    Inside a traced step the epoch length must be known (a traced value is
    kept), so the schedule refuses to run there without it."""
    unknown = quoted("learning-rate warmup: this process's steps per epoch are not known (a dataset of unknown or "
                     "infinite cardinality?): convert with --steps-per-epoch S")
    return (
        f"@{keras}.utils.register_keras_serializable({quoted('tfdist')})\n"
        f"class {name}({keras}.optimizers.schedules.LearningRateSchedule):\n"
        f"    \"\"\"Gradual warmup (Goyal et al. 2017): the learning rate rises linearly, step by step, from\n"
        f"    the single-process rate to the scaled one (`rate`: a number or the script's own schedule)\n"
        f"    over the first `epochs` epochs of this process's optimizer steps.\"\"\"\n"
        f"\n"
        f"    steps_per_epoch = {steps}  # this process's optimizer steps per epoch\n"
        f"\n"
        f"    def __init__(self, rate, factor, epochs):\n"
        f"        super().__init__()\n"
        f"        self.rate = rate\n"
        f"        self.factor = factor  # scaled rate / single-process rate\n"
        f"        self.epochs = epochs\n"
        f"\n"
        f"    def __call__(self, step):\n"
        f"        rate = self.rate(step) if callable(self.rate) else self.rate\n"
        f"        if self.steps_per_epoch is None and {{tf}}.executing_eagerly():\n"
        f"            return rate / self.factor  # read before training: the first rate\n"
        f"        if self.steps_per_epoch is None or self.steps_per_epoch < 1:\n"
        f"            raise ValueError({unknown})\n"
        f"        done = {{tf}}.minimum({{tf}}.cast(step, {{tf}}.float32) / (self.epochs * self.steps_per_epoch), 1.0)\n"
        f"        return rate * (1.0 / self.factor + (1.0 - 1.0 / self.factor) * done)\n"
        f"\n"
        f"    def get_config(self):\n"
        f"        rate = {keras}.optimizers.schedules.serialize(self.rate) if callable(self.rate) else self.rate\n"
        f"        return {{{quoted('rate')}: rate, {quoted('factor')}: self.factor, {quoted('epochs')}: self.epochs}}\n"
        f"\n"
        f"    @classmethod\n"
        f"    def from_config(cls, config):  # optimizers are rebuilt from their config (Horovod, saving)\n"
        f"        config = dict(config)\n"
        f"        if isinstance(config[{quoted('rate')}], dict):\n"
        f"            config[{quoted('rate')}] = {keras}.optimizers.schedules.deserialize(config[{quoted('rate')}])\n"
        f"        return cls(**config)\n"
    )


def warmup_epoch_callback_class(name: str, keras: str, schedule: str, quoted) -> str:
    """fit() knows its steps per epoch when it starts (before its first,
    traced, step): it hands them to the warmup schedule."""
    return (
        f"class {name}({keras}.callbacks.Callback):\n"
        f"    \"\"\"Tells {schedule} how many steps fit() takes per epoch on this process.\"\"\"\n"
        f"\n"
        f"    def on_train_begin(self, logs=None):\n"
        f"        {schedule}.steps_per_epoch = self.params.get({quoted('steps')})\n"
    )


def tf1_warmup_function(name: str) -> str:
    """The TF1 form: a rate tensor warmed up over the first ``steps`` global
    steps (the step minimize() increments on this process)."""
    return (
        f"def {name}(rate, step, factor, steps):\n"
        f"    \"\"\"Gradual warmup (Goyal et al. 2017): the learning rate rises linearly, step by step, from\n"
        f"    the single-process rate to the scaled one (`rate`: a number or the script's own decayed rate)\n"
        f"    over this process's first `steps` global steps.\"\"\"\n"
        f"    done = {{tf}}.minimum({{tf}}.cast(step, {{tf}}.float32) / float(steps), 1.0)\n"
        f"    return rate * (1.0 / factor + (1.0 - 1.0 / factor) * done)\n"
    )
