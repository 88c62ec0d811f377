"""The probe's environment variables and its one STATE object, shared by all
parts of the probe (each module imports this same instance)."""
from __future__ import annotations

import os
import threading
import time

PROBE_DIR_ENV = "TFDIST_PROBE_DIR"
SAMPLE_ROWS_ENV = "TFDIST_PROBE_SAMPLE_ROWS"
SAMPLE_VALUES_ENV = "TFDIST_PROBE_SAMPLE_VALUES"
DEFAULT_SAMPLE_ROWS = 200_000
SAMPLE_HASH = "blake2b-8(<dtype><row shape>;<row bytes>)"
MAX_STEPS_ENV = "TFDIST_PROBE_MAX_STEPS"
LOSSES_ENV = "TFDIST_PROBE_LOSSES"
#: verify --compare: seed Python's, NumPy's and TensorFlow's global generators
#: with this value + the rank before the script runs.  The original (rank 0 of
#: 1) and rank 0 of the converted run then start from the same initial weights
#: (which rank 0 gives every replica), so their losses differ by the training
#: only, not by the draw; the other ranks get other seeds, so a conversion that
#: relies on ranks drawing alike (an unseeded shuffle before a split) stays
#: visible.  A script that seeds itself overrides it.
SEED_ENV = "TFDIST_PROBE_SEED"
#: TFDIST_PROBE_LOCAL_DEVICES=N (tfdist verify --local-devices N): this
#: process's CPU is presented as N logical devices (see split_local_cpu).
LOCAL_DEVICES_ENV = "TFDIST_PROBE_LOCAL_DEVICES"
#: Loss values kept per series before thinning to every other one (a long run
#: keeps its whole curve at a coarser resolution).
MAX_LOSS_POINTS = 20000
#: tfdist's own PYTHONPATH entry / the user's original PYTHONPATH, restored
#: before the script runs so the script sees its usual environment.
ADDED_PATH_ENV = "TFDIST_PROBE_ADDED_PATH"
ORIG_PYTHONPATH_ENV = "TFDIST_PROBE_ORIG_PYTHONPATH"

RECORD_VERSION = 1


class _State:
    def __init__(self):
        self.installed = False
        self.pid = os.getpid()
        self.start = time.time()
        self.errors: list[str] = []
        self.lock = threading.RLock()
        self.variables: list = []          # strong refs, creation order
        self.variable_ids: set[int] = set()
        self.storage_classes: tuple = ()
        self.keras_optimizers: list = []   # strong refs
        self.keras_optimizer_ids: set[int] = set()
        self.distributed_var_class = None  # tf.distribute DistributedVariable, once resolved
        self.component_ids: set[int] = set()   # per-device copies of distributed variables
        self.strategies: list = []         # tf.distribute strategies the script built
        self.internal = threading.local()  # inside TF internals that create non-model variables
        self.sessions: list = []           # weakrefs to open TF1 sessions
        self.graph_snapshots: dict = {}    # id(graph) -> snapshot dict
        self.graph_order: list = []
        self.train_ops: set = set()        # (id(graph), op name)
        self.train_dep_cache: dict = {}
        self.tf1_train_runs = 0
        self.tf1_eager_applies = 0
        # eager GradientTape.gradient calls outside fit(): the steps of a loop
        # updating its variables by hand (no optimizer counts them)
        self.eager_tape_gradients = 0
        self.in_probe = threading.local()
        self.files: dict = {}              # absolute path -> entry
        # files opened read-write without truncating ("r+b": tf-keras
        # load_model opens a .keras archive so): path -> (mtime_ns, size) at
        # the open; kept as written only if the file changed
        self.updated_in_place: dict = {}
        self.ignore_prefixes: tuple = ((), "\0", "\0")
        self.start_cwd = os.getcwd()
        self.probe_dir = None
        self.max_steps = None
        self.cap_done = 0
        self.cap_applied = False
        self.planned_steps = 0
        self.planned_unknown = False
        self.fit_calls = 0
        self.sample_batches: list = []     # dicts, in consumption order
        self.sample_rows = 0
        self.sample_cap = DEFAULT_SAMPLE_ROWS
        self.sample_capped = False
        self.sample_values_cap = 0
        self.sample_values: dict = {}      # hash -> {"dtype", "shape", "b64"}
        self.sample_skipped: list = []     # sources seen but not recorded, and why
        self.iterators = 0
        self.fit_samples_calls = 0
        self.fetch_seq = 0
        self.keras_fit_depth = 0
        self.fit_starts: list = []         # (fetch_seq, step counter) as each outermost fit() begins
        self.peeking = 0                   # inside a Keras 3 method that peeks at a batch
        self.iterator_step_mark = None     # step counter when the last eager iterator batch was fetched
        self.tape_batches = 0
        self.record_losses = False
        self.seed = None
        self.seed_base = None              # SEED_ENV's value: the seed every rank shares
        self.script_seeded = False         # the script set TensorFlow's global seed itself
        self.local_devices = 1        # TFDIST_PROBE_LOCAL_DEVICES, once applied
        self.loss_steps: list = []         # [seq, value]: tape.gradient targets / TF1 losses, in order
        self.loss_stride = 1               # keep every loss_stride-th value (thinned when long)
        self.loss_seen = 0
        self.loss_batches: list = []       # Keras fit: [fit call, epoch, batch, logs]
        self.loss_epochs: list = []        # Keras fit: [fit call, epoch, logs]
        self.fit_loss_calls = 0
        self.fit_rates: list = []          # Keras fit: per fit call, the step-0 learning rates of the optimizers it stepped
        self.tf1_losses: dict = {}         # (id(graph), train op name) -> loss tensor
        self.tf1_pending_loss: dict = {}   # id(graph) -> loss of the last compute_gradients
        self.exit_code = None
        self.exit_how = None
        self.exception = None
        self.script = None
        self.written = False


STATE = _State()


def note_error(where: str, exc: BaseException) -> None:
    try:
        if len(STATE.errors) < 50:
            STATE.errors.append(f"{where}: {type(exc).__name__}: {exc}"[:300])
    except Exception:  # noqa: BLE001
        pass


def probe_busy() -> bool:
    return getattr(STATE.in_probe, "busy", False)


class ProbeBusy:
    """Marks probe-internal TF calls so observers ignore them."""

    def __enter__(self):
        self.prev = probe_busy()
        STATE.in_probe.busy = True

    def __exit__(self, *exc):
        STATE.in_probe.busy = self.prev
        return False
