"""Kinds of objects tfdist tracks in a program (a Keras model, an optimizer,
a dataset, a session...), the framework classes and calls that make each,
and the facts a class or a value carries."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

import libcst as cst

from .. import apis

# Kinds of objects tfdist tracks.
MODEL = "keras.Model"
KERAS_OPTIMIZER = "keras optimizer"
TF1_OPTIMIZER = "tf1 optimizer"
SCHEDULE = "learning-rate schedule"
DATASET = "tf.data.Dataset"
CALLBACK = "keras callback"
SEQUENCE = "keras Sequence"
SESSION = "tf.Session"
MONITORED_SESSION = "MonitoredSession"
TAPE = "GradientTape"
FILE_WRITER = "summary writer"
TF1_FILE_WRITER = "tf1 FileWriter"
CHECKPOINT = "checkpoint"
SAVER = "tf1 Saver"
CONFIG_PROTO = "ConfigProto"
MODULE = "tf.Module"
# An instance of a class defined in the user's code (its methods and self
# attributes are followed).
INSTANCE = "instance"
TUTORIAL_DATASETS = "tf1 tutorial data sets"  # read_data_sets(): .train/.test with next_batch()

# Framework base classes -> the kind their subclasses have.
ROOT_KINDS: Dict[str, str] = {}
for _n in apis.KERAS_MODEL_CLASSES:
    ROOT_KINDS[_n] = MODEL
for _n in list(apis.KERAS_OPTIMIZER_BASES) + list(apis.KERAS_OPTIMIZERS) + list(apis.KERAS_LEGACY_OPTIMIZERS):
    ROOT_KINDS[_n] = KERAS_OPTIMIZER
for _n in list(apis.TF1_OPTIMIZER_BASES) + list(apis.TF1_OPTIMIZERS):
    ROOT_KINDS[_n] = TF1_OPTIMIZER
for _n in apis.KERAS_CALLBACK_BASES:
    ROOT_KINDS[_n] = CALLBACK
for _n in apis.TF_MODULE_BASES:
    ROOT_KINDS[_n] = MODULE
for _n in apis.KERAS_LR_SCHEDULE_BASES:
    ROOT_KINDS[_n] = SCHEDULE
for _n in apis.KERAS_SEQUENCE_BASES:
    ROOT_KINDS[_n] = SEQUENCE

# Constructors / factories -> kind of the value they return.
CALL_KINDS: Dict[str, str] = dict(ROOT_KINDS)
CALL_KINDS.update({n: MODEL for n in apis.KERAS_MODEL_FACTORIES})
CALL_KINDS.update({n: SCHEDULE for n in apis.KERAS_LR_SCHEDULES})
CALL_KINDS.update({n: DATASET for n in apis.DATASET_SOURCES})
CALL_KINDS.update({n: DATASET for n in apis.DATASET_COMBINERS})
CALL_KINDS.update({n: DATASET for n in apis.DATASET_CLASS_CALLS})
CALL_KINDS.update({n: SEQUENCE for n in apis.KERAS_SEQUENCE_CLASSES})
CALL_KINDS.update({n: SESSION for n in apis.TF1_SESSIONS})
CALL_KINDS.update({n: CALLBACK for n in apis.TRACKER_KERAS_CALLBACKS})
CALL_KINDS.update({n: MONITORED_SESSION for n in apis.TF1_MONITORED_SESSIONS})
CALL_KINDS[apis.GRADIENT_TAPE] = TAPE
CALL_KINDS[apis.TF2_FILE_WRITER] = FILE_WRITER
CALL_KINDS[apis.TF1_FILE_WRITER] = TF1_FILE_WRITER
CALL_KINDS[apis.TF2_CHECKPOINT] = CHECKPOINT
CALL_KINDS[apis.TF2_CHECKPOINT_MANAGER] = CHECKPOINT
CALL_KINDS[apis.TF1_SAVER] = SAVER
CALL_KINDS[apis.TF1_CONFIG_PROTO] = CONFIG_PROTO
CALL_KINDS.update({n: TUTORIAL_DATASETS for n in apis.TF1_TUTORIAL_DATASETS})


@dataclass(frozen=True, eq=True)
class Type:
    kind: str
    name: str = ""  # canonical class / constructor name
    # where the value was constructed (a cst.Call), compared by identity
    call: Optional[cst.Call] = field(default=None, compare=False, hash=False)


@dataclass
class ClassFact:
    name: str  # qualified within its module ("Net", "make.<locals>.Net")
    kinds: Set[str]
    chain: List[str]  # ["Net", "BaseNet", "tensorflow.keras.Model"]
    node: Optional[cst.ClassDef] = None

    def describe(self) -> str:
        return " <: ".join(self.chain)
