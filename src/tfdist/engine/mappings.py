"""The keys a ``**mapping`` argument may pass, and the element giving one
(a mixin of :class:`tfdist.engine.analysis.Analysis`)."""
from __future__ import annotations

from typing import Optional, Set

import libcst as cst

from .. import apis
from .scopes import walk


class Mappings:
    """Keys of mappings unpacked into calls, in one module."""

    def mapping_keys(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[Set[str]]:
        """The keyword names a mapping unpacked as ``**expr`` may pass; None
        when they cannot all be known.

        Known: a dict literal with string keys, ``dict(k=...)``, a name bound
        to one of these, and a function's ``**kwargs`` (the extra keywords
        of every call of the function by name) -- each plus the keys the
        code then sets on it (``d["k"] = ...``, ``d.setdefault("k", ...)``).
        Any other use of the name (``d.update(...)``, passing it on, a caller
        that unpacks a mapping itself) makes the keys unknown.
        """
        if depth > 6:
            return None
        if isinstance(expr, cst.Dict):
            keys: Set[str] = set()
            for element in expr.elements:
                if isinstance(element, cst.StarredDictElement):
                    inner = self.mapping_keys(element.value, depth + 1)
                    if inner is None:
                        return None
                    keys |= inner
                elif isinstance(element.key, cst.SimpleString):
                    keys.add(str(element.key.evaluated_value))
                else:
                    return None
            return keys
        if isinstance(expr, cst.Call) and self.is_name(expr.func, apis.DICT_CONSTRUCTORS) is not None:
            if any(arg.keyword is None for arg in expr.args):
                return None  # dict(other, ...) / dict(**other)
            return {arg.keyword.value for arg in expr.args}
        if not isinstance(expr, cst.Name):
            return None
        bound = self.assigned_values(expr)
        if not bound:
            return None
        keys = self._bound_mapping_keys(bound, depth)
        if keys is None:
            return None
        origins = [origin for origin, _ in bound]
        if not self._add_keys_set_by_uses(expr, origins, keys):
            return None
        return keys

    def _bound_mapping_keys(self, bound, depth: int) -> Optional[Set[str]]:
        """mapping_keys of a name's bindings (``bound``: origins and values), all of them; None
        when one is unknown."""
        keys = set()
        for origin, value in bound:
            if value is not None:
                inner = self.mapping_keys(value, depth + 1)
            elif isinstance(origin, cst.Param) and self._is_star_kwarg(origin):
                inner = self._extra_keywords(origin, depth)
            elif isinstance(origin, cst.Param):
                passed = self.parameter_values(origin)
                inner = set() if passed else None
                for argument in passed:
                    keys_passed = self.mapping_keys(argument, depth + 1)
                    inner = None if keys_passed is None or inner is None else inner | keys_passed
            else:
                inner = None
            if inner is None:
                return None
            keys |= inner
        return keys

    def _add_keys_set_by_uses(self, expr: cst.Name, origins, keys: Set[str]) -> bool:
        """Add to ``keys`` those the code sets on (or reads of) the mapping ``expr`` holds, bound at
        ``origins``; False when a use of it makes its keys unknown."""
        for use in walk(self.module):
            if not (isinstance(use, cst.Name) and use.value == expr.value and use is not expr):
                continue
            if not any(o is b for o in origins for b, _ in self.assigned_values(use)):
                continue
            par = self.parent(use)
            if isinstance(par, (cst.AssignTarget, cst.Param)) or isinstance(par, cst.Arg) and par.star == "**" \
                    or isinstance(par, cst.StarredDictElement):
                continue
            if isinstance(par, cst.Attribute) and par.value is use:
                method = par.attr.value
                call = self.parent(par)
                if method in ("get", "items", "keys", "values", "copy", "pop", "__contains__"):
                    continue
                if method == "setdefault" and isinstance(call, cst.Call) and call.args \
                        and isinstance(call.args[0].value, cst.SimpleString):
                    keys.add(str(call.args[0].value.evaluated_value))
                    continue
                return False
            if isinstance(par, cst.Subscript) and par.value is use:
                index = par.slice[0].slice if len(par.slice) == 1 else None
                if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                    keys.add(str(index.value.evaluated_value))  # read or written: either way a key it may hold
                    continue
                return False
            if isinstance(par, cst.Comparison):
                continue  # "k" in d
            return False
        return True

    def mapping_value(self, expr: cst.BaseExpression, key: str) -> Optional[cst.CSTNode]:
        """The element (a dict literal's DictElement, a ``dict(...)`` call's
        Arg) that gives ``key`` in the mapping ``expr`` -- the literal itself
        or a name bound once to it and never written to afterwards -- whose
        ``.value`` is what ``**expr`` passes for key; None otherwise."""
        if isinstance(expr, cst.Name):
            bound = self.assigned_values(expr)
            if len(bound) != 1 or bound[0][1] is None or self.mapping_keys(expr) is None:
                return None
            literal = bound[0][1]
            for use in walk(self.module):
                if isinstance(use, cst.Name) and use.value == expr.value and use is not expr \
                        and any(o is bound[0][0] for o, _ in self.assigned_values(use)):
                    par = self.parent(use)
                    if isinstance(par, cst.Attribute) and par.attr.value == "setdefault" \
                            or isinstance(par, cst.Subscript) and isinstance(self.parent(par), cst.AssignTarget):
                        return None  # written after the literal: its value may not be the literal's
            expr = literal
        if isinstance(expr, cst.Dict):
            found = [e for e in expr.elements if isinstance(e, cst.DictElement)
                     and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == key]
            return found[-1] if found else None
        if isinstance(expr, cst.Call) and self.is_name(expr.func, apis.DICT_CONSTRUCTORS) is not None:
            return next((arg for arg in expr.args if arg.keyword is not None and arg.keyword.value == key), None)
        return None

    def _is_star_kwarg(self, param: cst.Param) -> bool:
        params = self.parent(param)
        return isinstance(params, cst.Parameters) and params.star_kwarg is param

    def _extra_keywords(self, param: cst.Param, depth: int) -> Optional[Set[str]]:
        """The keywords a function's ``**param`` collects from its calls by name."""
        fdef = next((x for x in self.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if fdef is None or fdef.params.star_kwarg is not param or self.method_owner(fdef) is not None:
            return None
        calls = self.calls_by_name(fdef)
        mentions = [n for n in walk(self.module) if isinstance(n, cst.Name) and n.value == fdef.name.value
                    and n is not fdef.name]
        if len(mentions) != len(calls):
            return None  # the function is passed on somewhere: called with keywords not seen here
        named = {p.name.value for p in [*fdef.params.params, *fdef.params.kwonly_params]}
        keys: Set[str] = set()
        for call in calls:
            for arg in call.args:
                if arg.star == "**":
                    inner = self.mapping_keys(arg.value, depth + 1)
                    if inner is None:
                        return None
                    keys |= inner - named
                elif arg.keyword is not None and arg.keyword.value not in named:
                    keys.add(arg.keyword.value)
        return keys
