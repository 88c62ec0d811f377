"""Start-up probe: runs a training script unchanged and records what it did.

Usage (normally launched by ``tfdist verify``)::

    TFDIST_PROBE_DIR=/some/dir python -m tfdist.runtime.probe [--as-file ORIG] SCRIPT [ARGS...]

The probe executes SCRIPT exactly like ``python SCRIPT ARGS`` would (as
``__main__``, with ``sys.argv`` = [SCRIPT, *ARGS] and the script's directory
first on ``sys.path``).  It never imports TensorFlow itself: observers are
installed by post-import hooks, right after the script imports TensorFlow /
Keras / h5py.  They watch from outside the user's code:

* every ``tf.Variable`` created (eager values read at exit; TF1 graph
  variables read from each ``Session`` just before it closes, or at exit if it
  is still open);
* optimizer steps: ``iterations`` of every Keras optimizer instance (new and
  legacy), ``Session.run`` calls that execute an op returned by a TF1
  ``Optimizer.apply_gradients``/``minimize``, and the TF1 global step;
* checkpoint / summary / model files written, through TensorFlow's Python
  entry points plus an audit hook on Python ``open()``;
* the samples consumed, as per-row hashes (see "Samples" below).

At exit each process writes ``rank-<R>.json`` into ``$TFDIST_PROBE_DIR``
(rank from HOROVOD_RANK / OMPI_COMM_WORLD_RANK / PMI_RANK, else
``hvd.rank()``, else the task of ``TF_CONFIG`` (tf.distribute: a "chief" task
is rank 0 and pushes the workers' indices up by one), else 0).

TensorFlow 2.15 (Keras 2) and TensorFlow 2.16+ (Keras 3, or tf-keras with
``TF_USE_LEGACY_KERAS=1``) are both observed.  tf.distribute variables
(MirroredVariable, SyncOnReadVariable) are read on each process from their
local primary copy (never through a cross-worker reduction, which could hang
at exit), and their per-device copies are not counted again; the
tf.distribute strategies the script built are recorded (``strategies``:
class, replicas in sync, workers, chief or not).  Files keep whether they
still existed at exit (``exists_at_exit``), so that ``tfdist verify`` can
tell the temporary directories TensorFlow's multi-worker rule gives
non-chief workers (``.../workertemp_<N>/...``, removed again) from writes to
the user's paths.  Every observer is wrapped so that a failure inside
the probe is recorded in ``probe_errors`` and never reaches the script.

``--as-file ORIG`` runs SCRIPT's code but presents it to itself as ORIG
(``__file__``, ``sys.argv[0]`` and ``sys.path[0]``), so a converted copy kept
in a temporary directory still finds files next to the original.

Optional ``TFDIST_PROBE_LOSSES=1`` (``tfdist verify --compare``): record the
training loss, from outside the script, into ``record["losses"]``:

* Keras ``fit``: a callback appended to fit's callbacks records ``logs`` after
  every batch (``batches``: the loss and metrics as Keras reports them, a
  running mean within the epoch) and every epoch (``epochs``: also ``val_*``);
* ``GradientTape`` loops outside ``fit``: the value of every
  ``tape.gradient`` target (the quantity minimised) in call order
  (``steps``).  Eager targets are read directly; inside a ``tf.function``
  the traced gradients are made to depend on a ``tf.py_function`` that
  records the target each time the step runs.  Under a tf.distribute
  strategy the target in a replica context is the loss divided by the
  replicas in sync (tfdist's conversion and Keras 3 losses both divide), so
  it is multiplied back: every run records the loss of its batch;
* TF1 sessions: the loss given to ``Optimizer.compute_gradients`` /
  ``minimize`` is linked to the train op its ``apply_gradients`` returns, and
  fetched together with that train op in the same ``Session.run`` (one
  evaluation of the same step: nothing else runs).

Optional ``TFDIST_PROBE_MAX_STEPS=K``: stop Keras ``Model.fit`` gracefully
(``model.stop_training``) once K optimizer steps ran in this process; the
steps ``fit`` had planned are recorded as ``planned_steps``.  Other training
loops are not capped (``steps_cap.applied`` stays false).

Samples (``record["samples"]``): each batch lists its rows as
``"<sample hash>:<label hash>:..."`` strings; every row is hashed with :func:`row_hashes`
(blake2b, 8 bytes, over ``<dtype><row shape>;`` + the row's bytes), so that
``tfdist verify`` can check that each rank fed every sample with its own
labels and that the ranks read different samples.  Four sources:

* ``tf1-feed``: a ``Session.run`` that runs a train op with a ``feed_dict``:
  the fed values with a leading batch dimension, aligned row by row; the
  first one (feed_dict order) is the sample, the others (same leading
  dimension) its labels.  One batch per training step.
* ``iterator``: eager iteration of a ``tf.data`` dataset (``OwnedIterator
  .__next__``) yielding a tuple/dict of tensors with a common leading
  dimension (first = sample, others = labels).  Every batch is recorded with
  the optimizer-step counter when it was fetched; a batch counts as
  ``trained`` when that counter moved before the next batch was fetched
  (evaluation loops do not move it).
* ``tape``: eager ``GradientTape`` loops (the model called on NumPy slices
  or eager tensors, outside ``tf.function``): while a tape records, the
  input of the first Keras model call is the sample batch and the ``y_true``
  of the first Keras loss call after it (a ``keras.losses.Loss`` object or a
  function of ``keras.losses``) in the same tape its labels, row by row when
  their leading dimensions match (otherwise the samples are recorded
  alone).  Like ``iterator`` batches, a batch counts as ``trained`` when the
  optimizer-step counter moved before the next recorded batch (tape,
  iterator or keras-fit) or the end.  Tapes inside
  ``Model.fit`` and steps whose batch the ``iterator`` source already
  recorded (an eager tf.data batch fetched since the last optimizer step)
  are not recorded again.
* ``keras-fit``: ``Model.fit`` given NumPy arrays / eager tensors: the rows of
  x (with y's rows as labels) once per call, with the number of epochs (the
  rows within an epoch are listed in the order given, not in fit's shuffled
  order).  ``fit`` over a dataset or generator is NOT recorded: it iterates
  inside a tf.function, and reading the dataset a second time could change
  what it yields (shuffle seeds, generators).

At most TFDIST_PROBE_SAMPLE_ROWS rows (default 200,000) are kept; further
rows set ``capped``.  TFDIST_PROBE_SAMPLE_VALUES=K also keeps the values of
up to K distinct rows (``values``: hash -> dtype/shape/base64), for tests
that recompute a label from its sample.
"""
from __future__ import annotations

import atexit
import os
import sys
import types

from .files import audit_hook, compute_ignore_prefixes
from .hooks import PostImportFinder, run_hook
from .ranks import rank_and_size
from .record import atexit_write, write_record
from .state import (ADDED_PATH_ENV, LOSSES_ENV, MAX_STEPS_ENV, ORIG_PYTHONPATH_ENV, PROBE_DIR_ENV, SAMPLE_ROWS_ENV,
                    SAMPLE_VALUES_ENV, SEED_ENV, STATE)
from .tables import POST_IMPORT_HOOKS

# The names other modules and tests import from ``tfdist.runtime.probe``
# (tfdist.runtime.verify: the environment variables and GATED_KINDS; tests:
# the hashing), kept importable from the package.
from .files import classify_path  # noqa: F401
from .hashing import combine_row_hashes, digest_arrays, row_hashes  # noqa: F401
from .record import build_record  # noqa: F401
from .state import (DEFAULT_SAMPLE_ROWS, LOCAL_DEVICES_ENV, MAX_LOSS_POINTS, RECORD_VERSION,  # noqa: F401
                    SAMPLE_HASH)
from .tables import GATED_KINDS  # noqa: F401

# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

def _wrap_os_exit():
    """Scripts sometimes end with os._exit() (skipping atexit): write the
    record first.  Forked children are ignored (write_record checks the pid)."""
    orig = os._exit
    if getattr(orig, "_tfdist_probe", False):
        return

    def _exit(status):
        if os.getpid() == STATE.pid and not STATE.written:
            try:
                STATE.exit_code, STATE.exit_how = int(status), "os._exit"
                write_record()
            except Exception:  # noqa: BLE001
                pass
        orig(status)

    _exit._tfdist_probe = True
    os._exit = _exit


def install() -> None:
    """Install the audit hook and post-import hooks (idempotent)."""
    if STATE.installed:
        return
    STATE.installed = True
    STATE.probe_dir = os.environ.get(PROBE_DIR_ENV) or None
    if STATE.probe_dir:
        STATE.probe_dir = os.path.abspath(STATE.probe_dir)
    cap = os.environ.get(MAX_STEPS_ENV, "").strip()
    if cap.isdigit() and int(cap) > 0:
        STATE.max_steps = int(cap)
    rows = os.environ.get(SAMPLE_ROWS_ENV, "").strip()
    if rows.isdigit():
        STATE.sample_cap = int(rows)
    values = os.environ.get(SAMPLE_VALUES_ENV, "").strip()
    if values.isdigit():
        STATE.sample_values_cap = int(values)
    STATE.record_losses = os.environ.get(LOSSES_ENV, "").strip() == "1"
    _seed_generators(os.environ.get(SEED_ENV, "").strip())
    STATE.ignore_prefixes = compute_ignore_prefixes()
    sys.addaudithook(audit_hook)
    _wrap_os_exit()
    sys.meta_path.insert(0, PostImportFinder())
    for name in list(POST_IMPORT_HOOKS):
        if name in sys.modules:
            run_hook(name, sys.modules[name])
    atexit.register(atexit_write)


def _seed_generators(text: str) -> None:
    """SEED_ENV: Python's and NumPy's generators now, TensorFlow's when it is
    imported (importing it here would come before the script's own set-up)."""
    if not text.isdigit():
        return
    STATE.seed_base = int(text)
    STATE.seed = STATE.seed_base + rank_and_size()[0]
    import random

    random.seed(STATE.seed)    # Keras 3 draws its initializers' seeds from here
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(STATE.seed % 2**32)


def _restore_environment():
    """Undo the PYTHONPATH entry tfdist added to import this probe, so the
    script (and its child processes) see their usual environment."""
    added = os.environ.pop(ADDED_PATH_ENV, None)
    if ORIG_PYTHONPATH_ENV in os.environ:
        orig = os.environ.pop(ORIG_PYTHONPATH_ENV)
        if orig:
            os.environ["PYTHONPATH"] = orig
        else:
            os.environ.pop("PYTHONPATH", None)
    if added:
        norm = os.path.abspath(added)
        sys.path[1:] = [p for p in sys.path[1:] if os.path.abspath(p or ".") != norm]


def _exec_script(script: str, as_file: str | None, args: list[str]) -> None:
    import importlib.machinery
    import importlib.util

    shown = as_file or script
    with open(script, "rb") as fh:
        source = importlib.util.decode_source(fh.read())
    code = compile(source, script, "exec", dont_inherit=True)
    sys.argv[:] = [shown, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(shown))
    main = types.ModuleType("__main__")
    main.__dict__.update({
        "__file__": shown,
        "__cached__": None,
        "__loader__": importlib.machinery.SourceFileLoader("__main__", shown),
        "__spec__": None,
        "__package__": None,
        "__builtins__": __builtins__,
    })
    sys.modules["__main__"] = main
    exec(code, main.__dict__)  # noqa: S102 - this is the point


def _trim_traceback(tb):
    """Drop the probe's own frames from the top of a traceback."""
    here = os.path.abspath(__file__)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == here:
        tb = tb.tb_next
    return tb


def _exit_code_of(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


USAGE = "usage: python -m tfdist.runtime.probe [--as-file ORIGINAL] SCRIPT [ARGS...]\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_file = None
    if argv[:1] == ["--as-file"] and len(argv) >= 2:
        as_file, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        return 2 if not argv else 0
    script, args = argv[0], argv[1:]
    if not os.path.isfile(script):
        sys.stderr.write(f"tfdist probe: no such script: {script}\n")
        return 2
    STATE.script = os.path.abspath(as_file or script)
    _restore_environment()
    install()
    try:
        _exec_script(script, as_file, args)
    except SystemExit as exc:
        STATE.exit_code, STATE.exit_how = _exit_code_of(exc.code), "sys.exit"
        if isinstance(exc.code, str):  # sys.exit("why"): the reason the script gave, as verify reports it
            STATE.exception = f"SystemExit: {exc.code}"[:1000]
        write_record()
        raise
    except KeyboardInterrupt:
        STATE.exit_code, STATE.exit_how, STATE.exception = 130, "exception", "KeyboardInterrupt"
        write_record()
        raise
    except BaseException as exc:  # noqa: BLE001 - reported like Python does
        STATE.exit_code, STATE.exit_how = 1, "exception"
        STATE.exception = f"{type(exc).__name__}: {exc}"[:1000]
        write_record()
        try:
            trimmed = _trim_traceback(exc.__traceback__)
            exc.__traceback__ = trimmed  # the default hook prints exc.__traceback__
            sys.excepthook(type(exc), exc, trimmed)
        except Exception:  # noqa: BLE001
            import traceback
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        return 1
    STATE.exit_code, STATE.exit_how = 0, "returned"
    write_record()
    return 0
