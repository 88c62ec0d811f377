"""Small flow-insensitive type inference: a name's type is the union of the
types of every value bound to it that reaches the use; a call's is what its
callee makes or returns (a mixin of :class:`tfdist.engine.analysis.Analysis`).
It never guesses: an unknown value has no type."""
from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from .. import apis
from .names import canonical
from .objects import CALL_KINDS, CALLBACK, DATASET, INSTANCE, MODEL, Type
from .values import returned_values


class TypeInference:
    """Types of expressions of one module."""

    def types(self, expr: Optional[cst.BaseExpression], _depth: int = 0) -> Set[Type]:
        if expr is None or _depth > 12:
            return set()
        key = id(expr)
        if key in self._type_cache:
            return self._type_cache[key]
        self._type_cache[key] = set()  # cycle guard (ds = ds.batch(...))
        result = self._infer(expr, _depth)
        self._type_cache[key] = result
        return result

    def _infer(self, expr: cst.BaseExpression, depth: int) -> Set[Type]:
        if isinstance(expr, cst.Call):
            return self._infer_call(expr, depth)
        if isinstance(expr, cst.Name):
            out: Set[Type] = set()
            for origin, value in self.assigned_values(expr):
                if value is not None:
                    out |= self.types(value, depth + 1)
                elif isinstance(origin, cst.Param):
                    out |= self.param_types(origin, depth)
                else:
                    for element in self.tuple_element_values(origin, depth):
                        out |= self.types(element, depth + 1)
                    if origin is not None and not out:
                        out |= self.external_element_types(origin)
            return out
        if isinstance(expr, cst.IfExp):
            return self.types(expr.body, depth + 1) | self.types(expr.orelse, depth + 1)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            # nets[0] of nets = [NN(), NN(bn=True)]: one of the list's elements
            out = set()
            for element in self.display_elements(expr.value):
                out |= self.types(element, depth + 1)
            return out
        if isinstance(expr, cst.Attribute):
            out = set()
            for cd in self.instance_classes(expr.value, depth):
                for value in self.attribute_values(cd, expr.attr.value):
                    out |= self.types(value, depth + 1)
            if not out:
                for value in self.module_attribute_values(expr) or self.assigned_attribute_values(expr, depth):
                    out |= self.types(value, depth + 1)
            return out
        return set()

    def _infer_call(self, call: cst.Call, depth: int) -> Set[Type]:
        wrapper = self.is_name(call, apis.KERAS_OPTIMIZER_WRAPPERS)
        if wrapper is not None:
            # LossScaleOptimizer(opt): the optimizer it wraps (its rate, its construction)
            keyword, position = apis.KERAS_OPTIMIZER_WRAPPERS[wrapper]
            inner = self.argument_of(call, position, keyword)
            return self.types(inner, depth + 1) if inner is not None else set()
        for name in sorted(self.names(call)):
            if name in CALL_KINDS:
                return {Type(CALL_KINDS[name], name, call)}
            if name.startswith(apis.KERAS_APPLICATIONS_PREFIX) and name[len(apis.KERAS_APPLICATIONS_PREFIX):][:1].isupper():
                return {Type(MODEL, name, call)}
            if name.startswith(apis.KERAS_PRESET_MODEL_PREFIXES):
                # keras_hub.models.BertTextClassifier(...) / .from_preset(...)
                parts = name.split(".")
                cls = parts[-2] if parts[-1] == "from_preset" else parts[-1]
                if cls[:1].isupper() and not cls.endswith(apis.KERAS_PRESET_NON_MODELS):
                    return {Type(MODEL, name, call)}
            if name.startswith(apis.KERAS_LIBRARY_MODEL_PREFIXES):
                # transformers.TFAutoModelForSequenceClassification.from_pretrained(...)
                parts = name.split(".")
                cls = parts[-2] if parts[-1] in apis.KERAS_LIBRARY_MODEL_FACTORIES else parts[-1]
                if any(marker in cls for marker in apis.KERAS_LIBRARY_MODEL_MARKERS):
                    return {Type(MODEL, name, call)}
            if name.startswith("keras.callbacks.") and name.rsplit(".", 1)[1][:1].isupper():
                return {Type(CALLBACK, name, call)}
        fact = self.class_of(call.func)
        if fact is not None and fact.kinds:
            return {Type(k, fact.name, call) for k in fact.kinds}
        if fact is not None and fact.node is not None and fact.name in self.classes:
            return {Type(INSTANCE, fact.name, call)}
        func = call.func
        if isinstance(func, cst.Attribute):
            out_m: Set[Type] = set()
            for fdef in self.methods_called(call, depth):
                for ret in returned_values(fdef):
                    out_m |= self.types(ret, depth + 1)
            if out_m:
                return out_m
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in apis.DATASET_METHODS and any(t.kind == DATASET for t in self.types(func.value, depth + 1)):
                return {Type(DATASET, "tensorflow.data.Dataset." + method, call)}
        out: Set[Type] = set()
        if isinstance(func, cst.Name):
            for fdef in self.local_functions(func):
                for ret in returned_values(fdef):
                    out |= self.types(ret, depth + 1)
        return out or self.external_return_types(call)

    def param_types(self, param: cst.Param, depth: int) -> Set[Type]:
        """A parameter's type: the types passed at this module's call sites,
        and its default's where a call leaves it out."""
        out: Set[Type] = set()
        for value in self.parameter_values(param, depth):
            out |= self.types(value, depth + 1)
        return out

    def kinds(self, expr: Optional[cst.BaseExpression]) -> Set[str]:
        return {t.kind for t in self.types(expr)}

    def is_kind(self, expr: Optional[cst.BaseExpression], kind: str) -> bool:
        return kind in self.kinds(expr)

    def instance_method_names(self, node: cst.CSTNode) -> Set[str]:
        """``<class>.method`` for ``x.method`` when every binding of ``x``
        reaching it is a call of a factory returning that class
        (``builder = tfds.builder(name)``; ``tfds.builder(name).method``
        too): ``apis.FACTORY_INSTANCES``, for the methods they list."""
        if isinstance(node, cst.Call):
            node = node.func
        if not isinstance(node, cst.Attribute) or node.attr.value not in apis.FACTORY_INSTANCE_METHODS:
            return set()
        receiver = node.value
        if isinstance(receiver, cst.Call):
            values = [receiver]
        elif isinstance(receiver, cst.Name):
            values = [v for _, v in self.assigned_values(receiver)]
        else:
            return set()
        classes = set()
        for value in values:
            if not isinstance(value, cst.Call):
                return set()
            made = {apis.FACTORY_INSTANCES.get(canonical(self.project.absolute(q)))
                    for q in self.scopes.qualified(value, follow_aliases=True)} - {None}
            if not made:
                return set()
            classes |= made
        return {f"{c}.{node.attr.value}" for c in classes}

    # ---------------------------------------------------------------- data
    def dataset_sources(self, expr: cst.BaseExpression, _seen: Optional[Set[int]] = None) -> List[cst.Call]:
        """The tf.data source constructor calls a dataset expression is built from."""
        seen = _seen if _seen is not None else set()
        if id(expr) in seen:
            return []
        seen.add(id(expr))
        if isinstance(expr, cst.Call):
            if self.is_name(expr, apis.DATASET_SOURCES):
                return [expr]
            combined = self.combined_datasets(expr)
            if combined is not None:  # sample_from_datasets([a, b]): the sources of a and b
                return [s for d in combined for s in self.dataset_sources(d, seen)]
            f = expr.func
            if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
                return self.dataset_sources(f.value, seen)
            if isinstance(f, cst.Name):
                out: List[cst.Call] = []
                for fdef in self.local_functions(f):
                    for ret in returned_values(fdef):
                        out += self.dataset_sources(ret, seen)
                return out
            return []
        if isinstance(expr, cst.Name):
            out = []
            for origin, value in self.assigned_values(expr):
                if value is not None:
                    out += self.dataset_sources(value, seen)
                elif isinstance(origin, cst.Param):  # passed in (or its default): where the callers built it
                    for arg in self.parameter_values(origin):
                        out += self.dataset_sources(arg, seen)
                else:  # one element of a tuple assignment
                    for element in self.tuple_element_values(origin):
                        out += self.dataset_sources(element, seen)
            return out
        return []

    def combined_datasets(self, call: cst.Call) -> Optional[List[cst.BaseExpression]]:
        """The datasets a combiner (``sample_from_datasets([a, b])``) is handed
        in a literal list or tuple, or a class-called dataset method
        (``tf.data.Dataset.concatenate(a, b)``) as its arguments; None for
        any other call."""
        joined = self.is_name(call, apis.DATASET_CLASS_CALLS)
        if joined is not None:  # tf.data.Dataset.concatenate(a, b)
            positional = [x.value for x in call.args if x.keyword is None and not x.star]
            count = apis.DATASET_CLASS_CALLS[joined]
            return positional[:count] if len(positional) >= count else None
        combiner = self.is_name(call, apis.DATASET_COMBINERS)
        if combiner is None:
            return None
        arg = next((x for x in call.args if x.keyword is not None and x.keyword.value == "datasets"), None)
        if arg is None:
            position = apis.DATASET_COMBINERS[combiner]
            positional = [x for x in call.args if x.keyword is None]
            arg = positional[position] if len(positional) > position else None
        if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)):
            return None
        return [e.value for e in arg.value.elements if not isinstance(e, cst.StarredElement)]

    def describe_types(self) -> List[str]:
        """``name: kind (line N)`` for every module or function binding with a known type."""
        out = []
        for node in self.assigns:
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                ts = self.types(node.value)
                if ts:
                    kinds = ", ".join(sorted({f"{t.kind} ({t.name})" if t.name else t.kind for t in ts}))
                    out.append((self.line(node), f"{node.targets[0].target.value}: {kinds} (line {self.line(node)})"))
        return [d for _, d in sorted(out)]
