"""``--backend auto``: which engine a file gets, and why.

Decided per file, first rule that applies:

1. TF1 ``Session`` code (``tf.Session``, ``tf.compat.v1.Session``,
   ``InteractiveSession``, ``MonitoredTrainingSession``...) gets
   **horovod**: tf.distribute has no conversion for Session training.
2. Keras 3 code (``import keras`` / ``from keras...``: the top-level Keras
   package, with ``keras.ops``, ``keras.config``..., or ``keras_core``) and
   code that imports ``tf_keras`` (Keras 2 on TensorFlow 2.16+) gets
   **tf-distribute**: Horovod does not run with Keras 3.
3. Otherwise the installed TensorFlow decides, read from the package
   metadata of the interpreter running tfdist (TensorFlow is not imported):
   2.16 or newer (Keras 3) gets **tf-distribute**, 2.15 or older **horovod**.
4. No TensorFlow installed and nothing in the code decides:
   **tf-distribute**, the engine of the TensorFlow of today (2.16+).

What the code shows beats what is installed: the code is what will run,
and tfdist may well be installed apart from the training environment.
``--backend horovod`` / ``--backend tf-distribute`` decide without any of this.
"""
from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

from . import apis
from .options import HOROVOD, TF_DISTRIBUTE

#: The distributions TensorFlow is installed as (the first found counts).
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-macos",
                            "tensorflow-intel", "tf-nightly", "tf-nightly-cpu")
#: The first TensorFlow release whose Keras is Keras 3, which Horovod does not support.
KERAS3_TENSORFLOW = (2, 16)
#: Session classes of TF1 training (canonical spellings: tensorflow.compat.v1.X is tensorflow.X).
TF1_SESSION_CLASSES = frozenset(apis.TF1_SESSIONS | apis.TF1_MONITORED_SESSIONS)
_KERAS3_ROOTS = {"keras": "Keras 3 code", "keras_core": "Keras 3 code (keras_core)",
                 "tf_keras": "Keras 2 of TensorFlow 2.16+ (tf_keras)"}

VersionLookup = Callable[[str], str]
#: How the installed TensorFlow's version is read (a distribution name ->
#: its version, PackageNotFoundError when not installed). Tests replace it
#: to fake an installation.
VERSION_OF: VersionLookup = importlib.metadata.version


@dataclass(frozen=True)
class Choice:
    """The engine ``auto`` chose for one file, and the reason, in words."""

    backend: str
    reason: str

    def describe(self) -> str:
        return f"engine {self.backend} (--backend auto: {self.reason})"


# ---------------------------------------------------------------- installed TensorFlow
def installed_tensorflow(version_of: VersionLookup = importlib.metadata.version) -> Optional[str]:
    """The installed TensorFlow's version, from package metadata (never
    imports TensorFlow); None when none is installed."""
    for name in TENSORFLOW_DISTRIBUTIONS:
        try:
            return version_of(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@functools.lru_cache(maxsize=8)
def _installed_cached(version_of: VersionLookup) -> Optional[str]:
    return installed_tensorflow(version_of)


def _release(version: str) -> Tuple[int, int]:
    """(major, minor) of a version string such as ``2.16.1`` or ``2.17.0rc1``."""
    parts = re.findall(r"\d+", version)[:2]
    return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) if parts else (0, 0)


# ---------------------------------------------------------------- what the code shows
def _imported(tree: ast.AST) -> Tuple[Dict[str, str], Optional[Tuple[int, str]], list]:
    """One walk: local name -> module path it stands for, the first Keras 3
    import as (line, root package), and the calls (for the sessions)."""
    names: Dict[str, str] = {}
    keras = None
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[root] = root
                if root in _KERAS3_ROOTS and (keras is None or node.lineno < keras[0]):
                    keras = (node.lineno, root)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            root = node.module.split(".")[0]
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            if root in _KERAS3_ROOTS and (keras is None or node.lineno < keras[0]):
                keras = (node.lineno, root)
    return names, keras, calls


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _canonical(name: str) -> str:
    for prefix in ("tensorflow.compat.v1.", "tensorflow.compat.v2."):
        if name.startswith(prefix):
            return "tensorflow." + name[len(prefix):]
    return name


def _first_session(calls: list, names: Dict[str, str]) -> Optional[Tuple[int, str]]:
    """(line, spelling) of the first call that builds a TF1 Session."""
    found = None
    for node in calls:
        spelled = _dotted(node.func)
        if spelled is None:
            continue
        head, _, rest = spelled.partition(".")
        qualified = names.get(head, head) + ("." + rest if rest else "")
        if _canonical(qualified) in TF1_SESSION_CLASSES and (found is None or node.lineno < found[0]):
            found = (node.lineno, spelled)
    return found


#: Cheap tests on the text before any parsing: most files show neither.
_MAYBE_SESSION = re.compile(r"Session\b")
_MAYBE_KERAS3 = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:keras|keras_core|tf_keras)\b", re.M)


def code_evidence(source: Union[str, bytes]) -> Optional[Choice]:
    """The engine the code itself asks for (rules 1 and 2), or None when it
    shows neither (or does not parse: then the conversion says what is wrong)."""
    text = source.decode("latin-1") if isinstance(source, bytes) else source
    if not (_MAYBE_SESSION.search(text) or _MAYBE_KERAS3.search(text)):
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names, keras, calls = _imported(tree)
    session = _first_session(calls, names)
    if session is not None:
        line, spelled = session
        return Choice(HOROVOD, f"line {line} trains with a TF1 session ({spelled}), which tf.distribute does not "
                               "convert")
    if keras is not None:
        line, root = keras
        return Choice(TF_DISTRIBUTE, f"line {line} imports {root}: {_KERAS3_ROOTS[root]}, which Horovod does not run")
    return None


# ---------------------------------------------------------------- the choice
def choose_engine(source: Union[str, bytes], version_of: Optional[VersionLookup] = None) -> Choice:
    """The engine ``--backend auto`` gives this file, and why (see the module's
    docstring for the order). ``version_of`` looks a distribution's version
    up (default: :data:`VERSION_OF`, importlib.metadata.version)."""
    evidence = code_evidence(source)
    if evidence is not None:
        return evidence
    version = _installed_cached(version_of or VERSION_OF)
    if version is None:
        return Choice(TF_DISTRIBUTE, "no TensorFlow is installed here and nothing in the code decides: "
                                     "tf-distribute, the engine of TensorFlow 2.16+")
    if _release(version) >= KERAS3_TENSORFLOW:
        return Choice(TF_DISTRIBUTE, f"TensorFlow {version} is installed (2.16+ runs Keras 3, which Horovod does "
                                     "not support) and nothing in the code decides")
    return Choice(HOROVOD, f"TensorFlow {version} is installed (2.15 or older: Horovod's stack) and nothing in the "
                           "code decides")


# ---------------------------------------------------------------- converted scripts
_HOROVOD_IMPORT = re.compile(r"^\s*(import horovod|from horovod)", re.M)
_TF_DISTRIBUTE_USE = re.compile(r"MultiWorkerMirroredStrategy|MirroredStrategy|tf\.distribute\.")


def written_for(text: str) -> Optional[str]:
    """The engine a converted (distributed) script was written for, from its
    source; None when it shows neither (``tfdist job``, ``verify --converted``)."""
    if _HOROVOD_IMPORT.search(text):
        return HOROVOD
    if _TF_DISTRIBUTE_USE.search(text):
        return TF_DISTRIBUTE
    return None
