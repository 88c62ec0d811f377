"""Class hierarchy and user classes: what a class derives from, the methods
an instance runs, the values ``self.attr`` is given (a mixin of
:class:`tfdist.engine.analysis.Analysis`)."""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from .names import canonical
from .objects import INSTANCE, ROOT_KINDS, ClassFact
from .values import returned_values


class ClassHierarchy:
    """Class facts of one module, over the analysis' bindings and types."""

    # ------------------------------------------------------- class hierarchy
    def class_qualname(self, cd: cst.ClassDef) -> str:
        for q in self.qualified(cd.name):
            return q
        return cd.name.value

    def class_fact(self, cd: cst.ClassDef, seen: Set[int]) -> ClassFact:
        qual = self.class_qualname(cd)
        if qual in self.classes:
            return self.classes[qual]
        if id(cd) in seen:
            return ClassFact(qual, set(), [qual], cd)
        seen.add(id(cd))
        kinds: Set[str] = set()
        chain: List[str] = [cd.name.value]
        for base in cd.bases:
            if base.keyword is not None:
                continue
            fact = self.class_of(base.value, seen)
            if fact and fact.kinds:
                kinds |= fact.kinds
                if len(chain) == 1:
                    chain += fact.chain
        fact = ClassFact(qual, kinds, chain, cd)
        self.classes[qual] = fact
        return fact

    def class_of(self, expr: cst.BaseExpression, seen: Optional[Set[int]] = None) -> Optional[ClassFact]:
        """What a class expression (a base, a constructor) refers to."""
        seen = seen if seen is not None else set()
        raw = self.qualified(expr)
        for q in sorted(raw):
            c = canonical(q)
            if c in ROOT_KINDS:
                return ClassFact(c, {ROOT_KINDS[c]}, [q])
            if c in self.classes:
                return self.classes[c]
            if q in self.project.classes:
                return self.project.classes[q]
        # A class defined in this module but not analysed yet (forward order).
        if isinstance(expr, cst.Name):
            for cd in self.classdefs:
                if cd.name.value == expr.value and self.class_qualname(cd) in raw:
                    return self.class_fact(cd, seen)
        return None

    # ------------------------------------------------- user classes, methods
    def method_owner(self, fdef: cst.FunctionDef) -> Optional[cst.ClassDef]:
        """The class a function is a method of: defined directly in its
        body, or attached to it afterwards (``Cls.make_dataset = make_dataset``)."""
        block = self.parent(fdef)
        owner = self.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(owner, cst.ClassDef):
            return owner
        return self.attached()[0].get(id(fdef))

    def attached(self):
        """Functions of this module attached to one of its classes by an
        assignment at module level (``WindowGenerator.train = train``, the
        way some notebooks add methods and properties cell by cell):
        ({id(function): class}, {(id(class), name): [function, ...]})."""
        cached = self.__dict__.get("_attached_cache")
        if cached is not None:
            return cached
        owners: Dict[int, cst.ClassDef] = {}
        members: Dict[Tuple[int, str], List[cst.FunctionDef]] = {}
        self.__dict__["_attached_cache"] = (owners, members)
        for assign in self.assigns:
            if self.enclosing_function(assign) is not None or not isinstance(assign.value, cst.Name) \
                    or len(assign.targets) != 1:
                continue
            target = assign.targets[0].target
            if not isinstance(target, cst.Attribute):
                continue
            fact = self.class_of(target.value)
            if fact is None or fact.node is None:
                continue
            for f in self.local_functions(assign.value):
                if self.enclosing_function(f) is None and id(f) not in owners:
                    owners[id(f)] = fact.node
                    members.setdefault((id(fact.node), target.attr.value), []).append(f)
        return owners, members

    def self_class(self, name: cst.Name) -> Optional[cst.ClassDef]:
        """The class whose instance ``name`` is, when name is a method's first parameter."""
        bound = self.assigned_values(name)
        if len(bound) != 1 or not isinstance(bound[0][0], cst.Param):
            return None
        param = bound[0][0]
        fdef = next((x for x in self.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if fdef is None or not fdef.params.params or fdef.params.params[0] is not param:
            return None
        if any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in fdef.decorators):
            return None
        return self.method_owner(fdef)

    def instance_classes(self, expr: cst.BaseExpression, depth: int = 0) -> List[cst.ClassDef]:
        """User classes of this module whose instance expr is."""
        if isinstance(expr, cst.Name):
            cd = self.self_class(expr)
            if cd is not None:  # the class or any subclass of it in this module
                return [cd] + [other.node for other in self.classes.values()
                               if other.node is not None and other.node is not cd
                               and cd in self.lineage(other.node)]
        out = []
        for t in self.types(expr, depth + 1):
            if t.kind == INSTANCE or t.name in self.classes:
                fact = self.classes.get(t.name)
                if fact is not None and fact.node is not None and fact.node not in out:
                    out.append(fact.node)
        return out

    def lineage(self, cd: cst.ClassDef) -> List[cst.ClassDef]:
        """The class and its base classes defined in this module, nearest first."""
        out = [cd]
        i = 0
        while i < len(out):
            for base in out[i].bases:
                fact = self.class_of(base.value) if base.keyword is None else None
                if fact is not None and fact.node is not None and fact.node not in out:
                    out.append(fact.node)
            i += 1
        return out

    def is_subclass_or_same(self, cd: cst.ClassDef, base: cst.ClassDef) -> bool:
        return base in self.lineage(cd)

    def class_methods(self, cd: cst.ClassDef, name: str) -> List[cst.FunctionDef]:
        """The method ``name`` resolves to on an instance of cd (first in the lineage)."""
        for klass in self.lineage(cd):
            found = [s for s in klass.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
            found += self.attached()[1].get((id(klass), name), [])
            if found:
                return found
        return []

    def methods_called(self, call: cst.Call, depth: int = 0) -> List[cst.FunctionDef]:
        """The user methods a call ``obj.m(...)`` runs, obj an instance of a user class."""
        func = call.func
        if not isinstance(func, cst.Attribute) or depth > 8:
            return []
        out = []
        for cd in self.instance_classes(func.value, depth):
            for f in self.class_methods(cd, func.attr.value):
                if f not in out:
                    out.append(f)
        return out

    def attribute_values(self, cd: cst.ClassDef, attr: str) -> List[cst.BaseExpression]:
        """Values assigned to ``self.attr`` in the methods of cd and its bases
        (``self.opt = Adam()``, ``self.model, self.opt = model, Adam()``, ``self.g, self.d =
        self.build()`` with ``build`` returning a tuple)."""
        key = (id(cd), attr)
        cache = self.__dict__.setdefault("_attr_cache", {})
        if key in cache:
            return cache[key]
        cache[key] = []
        out: List[cst.BaseExpression] = []
        # a property: what its getter returns (``window.train``)
        for f in self.class_methods(cd, attr):
            if any(isinstance(d.decorator, cst.Name) and d.decorator.value == "property" for d in f.decorators):
                out += returned_values(f)
        for klass in self.lineage(cd):
            for assign in self.assigns:
                fdef = self.enclosing_function(assign)
                if fdef is None or self.method_owner(fdef) is not klass:
                    continue
                for target in assign.targets:
                    out += self._self_attr_values(target.target, assign.value, attr, klass)
            for star in self._dict_updates(klass):  # self.__dict__.update(kwargs): Class(attr=value)
                out += [value for _call, value in self.keyword_values(star, attr)]
        cache[key] = out
        return out

    def _dict_updates(self, klass: cst.ClassDef) -> List[cst.Param]:
        """The ``**`` parameters of klass's methods that ``self.__dict__.update(kwargs)`` (or
        ``vars(self).update(kwargs)``) makes attributes of, one per keyword its callers pass
        (the module's calls read once, for every class)."""
        found = self.__dict__.get("_dict_update_params")
        if found is None:
            found = self.__dict__["_dict_update_params"] = self._find_dict_updates()
        return [star for owner, star in found if owner is klass]

    def _find_dict_updates(self) -> List[Tuple[cst.ClassDef, cst.Param]]:
        out = []
        for call in self.calls:
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "update" and len(call.args) == 1
                    and isinstance(call.args[0].value, cst.Name) and not call.args[0].star):
                continue
            target = func.value
            if isinstance(target, cst.Call) and isinstance(target.func, cst.Name) and target.func.value == "vars" \
                    and len(target.args) == 1:
                target = target.args[0].value
            elif isinstance(target, cst.Attribute) and target.attr.value == "__dict__":
                target = target.value
            else:
                continue
            fdef = self.enclosing_function(call)
            star = fdef.params.star_kwarg if fdef is not None else None
            owner = self.self_class(target) if isinstance(target, cst.Name) else None
            if owner is not None and isinstance(star, cst.Param) and star.name.value == call.args[0].value.value:
                out.append((owner, star))
        return out

    def _self_attr_values(self, target, value, attr: str, klass: cst.ClassDef) -> List[cst.BaseExpression]:
        if isinstance(target, cst.Attribute) and target.attr.value == attr and isinstance(target.value, cst.Name) \
                and self.self_class(target.value) is klass:
            return [value]
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements):
            out = []
            for t, v in zip(target.elements, value.elements):
                out += self._self_attr_values(t.value, v.value, attr, klass)
            return out
        if isinstance(target, (cst.Tuple, cst.List)):  # self.a, self.b = self.make(): the element it returns
            return [v for t in target.elements if self._self_attr_values(t.value, t.value, attr, klass)
                    for v in self.tuple_element_values(t.value)]
        return []
