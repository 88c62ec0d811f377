"""The other modules of a project, as one module's analysis reaches them (a
mixin of :class:`tfdist.engine.analysis.Analysis`).

A name imported from a module of the project (``from model import
build_ssd``) is followed into that module's source, which the project
context carries: each such module is parsed and analysed once per analysis,
with no project context of its own (what it imports from a third module is
not followed further, so the search is bounded and cannot cycle).
"""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from .objects import DATASET, MODEL, Type
from .values import returned_values

# The kinds a call of a function of another module is typed with: a Keras model
# or a tf.data dataset it returns. Other objects (optimizers, samplers) are
# followed by the facts that ask about them, which read the function itself.
EXTERNAL_KINDS = frozenset({MODEL, DATASET})


class ProjectModules:
    """Definitions of the project's other modules an expression refers to."""

    def project_definition(self, func, kind=cst.FunctionDef) -> Optional[Tuple["ProjectModules", cst.CSTNode]]:
        """(analysis of its module, the top-level def or class of ``kind``)
        that ``func`` (a name or dotted name) refers to in another module of
        the project, or None."""
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        for qual in sorted(self.qualified(func)):
            found = self.project.functions.get(self.project.absolute(qual))
            if found is None:
                continue
            other = self.project_module(*found)
            if other is None:
                continue
            name = qual.rpartition(".")[2]
            for stmt in other.module.body:
                if isinstance(stmt, kind) and stmt.name.value == name:
                    return other, stmt
        return None

    def project_module(self, module_name: str, source: bytes):
        """The analysis of another module of the project (None when it does
        not parse), made once."""
        cache = self.__dict__.setdefault("_project_modules", {})
        if module_name not in cache:
            try:
                module = cst.parse_module(source)
            except (cst.ParserSyntaxError, UnicodeDecodeError, RecursionError):
                module = None
            cache[module_name] = type(self)(module, type(self.project)(module_name)) if module is not None else None
        return cache[module_name]

    def external_element_types(self, target: cst.CSTNode) -> Set[Type]:
        """Types of the name ``target`` bound as one element of a tuple
        assignment from a call of another module's function (``ssd`` in
        ``anchors, features, ssd = build_ssd(...)``)."""
        position = self.unpacked_position(target)
        if position is None or not isinstance(position[0].value, cst.Call):
            return set()
        assign, index, size = position
        return self.external_return_types(assign.value, (index, size))

    def external_return_types(self, call: cst.Call, element: Optional[Tuple[int, int]] = None) -> Set[Type]:
        """Types of what ``call`` returns when it runs a function of another
        module of the project (``build_net(4)``), or, with ``element`` (index,
        size), of that element of the tuple of that size it returns: each
        made at ``call`` as far as this module sees (its statement creates
        the object's variables)."""
        found = self.project_definition(call.func) if isinstance(call, cst.Call) else None
        if found is None:
            return set()
        other, fdef = found
        values: List[cst.BaseExpression] = []
        for ret in returned_values(fdef):
            if element is None:
                values.append(ret)
                continue
            index, size = element
            tuples = [ret] if isinstance(ret, (cst.Tuple, cst.List)) else \
                [v for _o, v in other.assigned_values(ret) if isinstance(v, (cst.Tuple, cst.List))] \
                if isinstance(ret, cst.Name) else []
            values += [t.elements[index].value for t in tuples if len(t.elements) == size
                       and not any(isinstance(e, cst.StarredElement) for e in t.elements)]
        return {Type(t.kind, t.name, call) for v in values for t in other.types(v) if t.kind in EXTERNAL_KINDS}
