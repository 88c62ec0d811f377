"""Training loops over an instance of an iterator class of the script's own: which instance, which
attributes hold its rows.

Training loops over an instance of an iterator class of the script's own
(``for images, labels in trainset:`` with ``trainset = Dataset(...)`` and
``class Dataset`` defining ``__iter__``/``__next__``): the YOLO-style data
loader, which keeps its samples in attributes set in ``__init__`` (a list
of annotation lines read from a file, arrays handed in) and cuts each batch
from them by position.

The class is divided where its samples are final: right after ``__init__``
binds the last of them, each rank keeps its own equal share
(``self.annotations = self.annotations[rank::size][:len // size]``). Counts
``__init__`` derives from them afterwards (``self.num_batchs``) are then the
rank's, so the loop, which ends when the class says so, runs 1/N of the
original's steps with no other change. Only when tfdist is sure:

* the class is built once in the module (a second instance, a test set,
  would be divided too);
* each sample attribute is bound once, by a statement of ``__init__``'s own
  body, and everything else the class does with it is reading rows
  (``self.x[i]``, ``self.x[i:j]``), its length or shape, or reordering it in
  place (``np.random.shuffle(self.x)``);
* nothing in ``__init__`` reads them before the last one is bound.
"""
from __future__ import annotations

from typing import Dict, Optional
import libcst as cst
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from . import batch_helpers


#: Methods that make an instance an iterator of batches.
ITERATOR_METHODS = ("__iter__", "__next__")


@fact
def calls_reached(a: A.Analysis, node, depth: int = 0) -> list:
    """The calls ``node`` makes, and those of the functions and methods of
    this module it calls (a few levels down)."""
    out = []
    for call in walk(node):
        if not isinstance(call, cst.Call):
            continue
        out.append(call)
        if depth < 3:
            for fdef in dataflow.callees(a, call):
                out += calls_reached(a, fdef.body, depth + 1)
    return out


def _self_attribute(node) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def sample_attributes(step: cst.FunctionDef) -> set:
    """Attributes ``__next__`` cuts rows of (``self.x[i:j]``, ``self.annotations[index]``)."""
    return {name for sub in walk(step.body) if isinstance(sub, cst.Subscript)
            for name in [_self_attribute(sub.value)] if name is not None}


def bound_in_init(init: cst.FunctionDef, samples: set) -> Optional[Dict[str, cst.BaseStatement]]:
    """The statement of ``__init__``'s own body binding each sample attribute
    (exactly one each); None if one is bound in a nested block or twice."""
    out: Dict[str, cst.BaseStatement] = {}
    for stmt in walk(init.body):
        if not isinstance(stmt, cst.Assign):
            continue
        for target in stmt.targets:
            for node in walk(target.target):
                name = _self_attribute(node)
                if name in samples:
                    holder = next((s for s in init.body.body if any(n is stmt for n in walk(s))), None)
                    if name in out or holder is None or not isinstance(holder, cst.SimpleStatementLine):
                        return None
                    out[name] = holder
    return out


def reads_attribute(stmt, samples: set) -> bool:
    return any(_self_attribute(n) in samples for n in walk(stmt) if isinstance(n, cst.Attribute))


@fact
def only_rows_read(a: A.Analysis, klass: cst.ClassDef, name: str, binding: cst.BaseStatement) -> bool:
    """Every use of ``self.<name>`` in the class, besides its binding, reads
    rows of it, its length or its shape, or reorders it in place."""
    for node in walk(klass.body):
        if _self_attribute(node) != name or any(node is n for n in walk(binding)):
            continue
        if batch_helpers.array_use(a, node) not in ("rows", "size", "shuffle"):
            return False
    return True


@fact
def iterated_instance(a: A.Analysis, loop) -> bool:
    """``loop`` iterates an instance of a class of this module defining
    ``__iter__`` and ``__next__``."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Name):
        return False
    classes = a.instance_classes(loop.iter)
    return len(classes) == 1 and all(a.class_methods(classes[0], m) for m in ITERATOR_METHODS)
