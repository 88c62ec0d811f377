"""Which parts of a batched dataset's elements have no batch dimension.

``ds.batch(32).map(lambda x: (x, (x, none_tensor)))`` with ``none_tensor =
tf.constant(0)``: a map after the batch returns, beside the batch, a scalar
made of no part of it (a dummy target for an output whose loss ignores it).
One process trains on it as written, but a tf.distribute strategy splits
every component of each global batch between the replicas along its first
dimension, and a scalar has none: tf.distribute stops at the first step
(``IndexError`` in ``get_static_batch_dim`` under MultiWorkerMirrored).
Only constants tfdist can see are reported: a number written out,
``tf.constant`` / ``tf.zeros`` / ``tf.ones`` of one, and names bound to those.
"""
from __future__ import annotations

from typing import List, Optional
import libcst as cst
from ..engine import analysis as A
from ..engine.memo import fact
from ..engine.values import returned_values
from .syntax import find_arg, method_name
from . import dataset_flow

#: Ops making a tensor from a value written out: a scalar when the value is one.
_CONSTANT_OPS = {"tensorflow.constant", "tensorflow.convert_to_tensor"}
#: Ops making a tensor of a shape written out: a scalar when the shape is [] or ().
_SHAPED_OPS = {"tensorflow.zeros", "tensorflow.ones", "tensorflow.fill"}
#: Dataset methods that put elements together into batches.
_BATCHING = {"batch", "padded_batch", "ragged_batch"}


def _is_number(node) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


@fact
def scalar_constant(a: A.Analysis, node, depth: int = 0) -> bool:
    """Is node a scalar tensor or number written out (or a name bound to one)?"""
    if _is_number(node):
        return True
    if isinstance(node, cst.Call):
        if a.is_name(node, _CONSTANT_OPS) and node.args and _is_number(node.args[0].value):
            shape = find_arg(node, "shape", 2)
            return shape is None or _empty_shape(shape.value)
        if a.is_name(node, _SHAPED_OPS) and node.args:
            return _empty_shape(node.args[0].value)
        return False
    if isinstance(node, cst.Name) and depth < 3:
        bound = a.assigned_values(node)
        return bool(bound) and all(v is not None and scalar_constant(a, v, depth + 1) for _, v in bound)
    return False


def _empty_shape(node) -> bool:
    return isinstance(node, (cst.List, cst.Tuple)) and not node.elements


def _components(node) -> List[cst.BaseExpression]:
    """The leaves of a structure written out (tuples, lists, dict values)."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return [leaf for el in node.elements for leaf in _components(el.value)]
    if isinstance(node, cst.Dict):
        return [leaf for el in node.elements if isinstance(el, cst.DictElement) for leaf in _components(el.value)]
    return [node]


def _mapped_results(a: A.Analysis, fn) -> List[cst.BaseExpression]:
    if isinstance(fn, cst.Lambda):
        return [fn.body]
    if isinstance(fn, cst.Name):
        return [r for fdef in a.local_functions(fn) for r in returned_values(fdef)]
    return []


@fact
def unbatched_components(a: A.Analysis, dataset: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The scalar constants a map after the dataset's batch puts in its elements (see the module)."""
    out: List[cst.BaseExpression] = []
    for src in dataset_flow.dataset_sources(a, dataset):
        path: Optional[List[cst.Call]] = dataset_flow.path_to(a, dataset, src)
        if not path:
            continue
        # path runs from the consumer back to the source: maps before (nearer the consumer than) a batch
        for call in path:
            name = method_name(call)
            if name in _BATCHING or name == "unbatch":
                break
            if name != "map" or not call.args:
                continue
            for result in _mapped_results(a, call.args[0].value):
                out += [leaf for leaf in _components(result)
                        if scalar_constant(a, leaf) and all(leaf is not o for o in out)]
    return out
