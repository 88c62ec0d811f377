"""Resolving what a name in user code refers to, through any import style.

The scope walk (:mod:`.scopes`) turns ``tf.keras.optimizers.Adam`` (with
``import tensorflow as tf``), ``keras.optimizers.Adam`` (with ``from
tensorflow import keras``) and ``Adam`` (with ``from tensorflow.keras.optimizers
import Adam``) into the same qualified name; :func:`canonical` then folds the
many spellings of one API (``tensorflow.compat.v1.train``, ``tf_keras``...)
into the single spelling used by the tables in :mod:`tfdist.apis`.
"""
from __future__ import annotations

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
