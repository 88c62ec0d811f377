"""Resolving what a name in user code refers to, through any import style.

The scope walk (:mod:`.scopes`) turns ``tf.keras.optimizers.Adam`` (with
``import tensorflow as tf``), ``keras.optimizers.Adam`` (with ``from
tensorflow import keras``) and ``Adam`` (with ``from tensorflow.keras.optimizers
import Adam``) into the same qualified name; :func:`canonical` then folds the
many spellings of one API (``tensorflow.compat.v1.train``, ``tf_keras``...)
into the single spelling used by the tables in :mod:`tfdist.apis`.
"""
from __future__ import annotations

import functools
from typing import Iterable, Optional, Set

import libcst as cst

from .. import apis


def canonical(qualified: str) -> str:
    name = qualified
    for _ in range(4):  # aliases can stack: tensorflow.compat.v1.keras.X
        before = name
        if name in apis.ALIAS_EXACT:
            name = apis.ALIAS_EXACT[name]
        for prefix, replacement in apis.ALIAS_PREFIXES:
            if name.startswith(prefix):
                name = replacement + name[len(prefix):]
                break
        if name == before:
            break
    return name


def keras_flavor(qualified: str) -> Optional[str]:
    """'tf.keras' for tf.keras spellings, 'keras' for standalone Keras 2."""
    if qualified.startswith(("tensorflow.", "tf_keras")):
        return "tf.keras" if "keras" in qualified else None
    if qualified == "keras" or qualified.startswith("keras."):
        return "keras"
    return None


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None (no evaluation)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = dotted(node.value)
        return f"{left}.{node.attr.value}" if left else None
    return None


def first(names: Iterable[str]) -> Optional[str]:
    for n in sorted(names):
        return n
    return None


def any_in(names: Set[str], table) -> Optional[str]:
    for n in sorted(names):
        if n in table:
            return n
    return None


#: Top-level packages whose star imports tfdist resolves (their modules' names are API facts).
STAR_IMPORT_PACKAGES = frozenset({"tensorflow", "keras", "tf_keras"})


@functools.lru_cache(maxsize=None)
def table_names() -> frozenset:
    """Every qualified name some table of :mod:`tfdist.apis` states a fact about."""
    out = set()

    def add(value, depth: int) -> None:
        if isinstance(value, str):
            if "." in value and not value.endswith(".") and " " not in value:
                out.add(value)
        elif depth < 3 and isinstance(value, (set, frozenset, list, tuple)):
            for item in value:
                add(item, depth + 1)
        elif depth < 3 and isinstance(value, dict):
            for key, item in value.items():
                add(key, depth + 1)
                add(item, depth + 1)

    for key, value in vars(apis).items():
        if key.isupper():
            add(value, 0)
    return frozenset(out)


def star_import_provides(module: str, name: str, only_star_import: bool) -> Optional[bool]:
    """Whether ``from module import *`` binds ``name``: None when that cannot
    be known (a module of another package may bind anything). For
    TensorFlow's and Keras's modules, True when a table knows ``module.name``
    (the module's other names are no fact any rule uses), or when it is the
    file's only star import (then an unbound name can come from nowhere else)."""
    if module.split(".")[0] not in STAR_IMPORT_PACKAGES:
        return None
    if name.startswith("_"):
        return False  # a star import binds no private name
    return only_star_import or canonical(f"{module}.{name}") in table_names()
