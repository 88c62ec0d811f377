"""What a name is bound to: the values its bindings give it (assignments,
tuple elements, loop targets over displays), the arguments a parameter
receives from this module's calls, what a function returns (a mixin of
:class:`tfdist.engine.analysis.Analysis`)."""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from .scopes import iter_children, walk


class BoundValues:
    """The values bound to names, parameters and tuple elements of one module."""

    # -------------------------------------------------------- type inference
    def assigned_values(self, name: cst.Name, reaching: bool = True) -> List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]:
        """(assigning statement or node, assigned value) for each binding of name.

        value is None when the binding is not a plain ``name = value`` (a
        parameter, a loop target, an import...). For a use, only the
        bindings that reach it (:mod:`.reaching`: the last one run before
        it in straight-line code, cell order being execution order) unless
        ``reaching`` is False (every earlier binding in its scope).
        """
        out = []
        for ref in self.bindings_of(name) if reaching else self.scopes.lookup(name):
            out += self._values_of(ref)
        out.sort(key=lambda t: self.line(t[0]) if t[0] is not None else 0)
        return out

    def _values_of(self, ref) -> List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]:
        """[(assigning statement or node, value)] of one binding."""
        node = ref.node
        if not isinstance(node, cst.Name):
            return [(node, None)]
        par = self.parent(node)
        if isinstance(par, cst.AssignTarget):
            assign = self.parent(par)
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                return [(assign, assign.value)]
        if isinstance(par, cst.AnnAssign) and par.value is not None:
            return [(par, par.value)]
        if isinstance(par, cst.AsName):
            item = self.parent(par)
            if isinstance(item, cst.WithItem):
                return [(item, item.item)]
        if isinstance(par, cst.Param):
            return [(par, None)]
        return [(node, None)]

    def augmented_values(self, target: cst.Name) -> List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]:
        """What an augmented assignment's target held before it (``x`` in
        ``x += residual`` reads the ``x`` bound before): (assigning statement
        or node, value) as :meth:`assigned_values` gives them; [] when
        ``target`` is no augmented assignment's target."""
        aug = self.parent(target)
        if not (isinstance(aug, cst.AugAssign) and aug.target is target):
            return []
        refs = self.reaching.read_by_augmented(target)
        if refs is None:  # not decided by the flow: every binding visible from here that starts before it
            line = self.line(aug)
            refs = [b for b in self.scopes.lookup(target)
                    if b.node is not target and b.node is not None and 0 < self.line(b.node) < line]
        out = []
        for ref in refs:
            out += [pair for pair in self._values_of(ref) if pair not in out]
        out.sort(key=lambda t: self.line(t[0]) if t[0] is not None else 0)
        return out

    def bindings_of(self, name: cst.Name):
        """The scope walk's bindings of name, narrowed for a use to those that reach it."""
        reached = self.reaching.bindings(name)
        return reached if reached is not None else self.scopes.lookup(name)

    def display_elements(self, expr) -> List[cst.BaseExpression]:
        """The elements of the list or tuple display expr is, or a name is
        bound to (every binding such a display); [] otherwise."""
        displays = [expr] if isinstance(expr, (cst.List, cst.Tuple)) else []
        if isinstance(expr, cst.Name):
            bound = self.assigned_values(expr)
            if bound and all(isinstance(v, (cst.List, cst.Tuple)) for _, v in bound):
                displays = [v for _, v in bound]
        return [e.value for d in displays for e in d.elements if isinstance(e, cst.Element)]

    def module_attribute_values(self, expr: cst.Attribute) -> List[cst.BaseExpression]:
        """Values this module assigns to an attribute of an imported module
        (``tf.model = tf.keras.Sequential()``, read back as ``tf.model``)."""
        base = self.qualified(expr.value)
        if not base or not self.is_import_binding(expr.value):
            return []
        out = []
        for assign in self.assigns:
            for target in assign.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and t.attr.value == expr.attr.value \
                        and self.qualified(t.value) == base:
                    out.append(assign.value)
        return out

    def object_origins(self, expr: cst.BaseExpression, depth: int = 0) -> Set[int]:
        """Ids of the calls that may have made the object ``expr`` stands for,
        through names, parameters (the arguments this module passes) and
        attributes assigned on an object (``model.optimizer = Adam()``)."""
        if depth > 6:
            return set()
        if isinstance(expr, cst.Call):  # made here, or by a function of this module that returns it
            made = {id(expr)}
            if isinstance(expr.func, cst.Name):
                for fdef in self.local_functions(expr.func):
                    for value in returned_values(fdef):
                        made |= self.object_origins(value, depth + 1)
            return made
        out: Set[int] = set()
        if isinstance(expr, cst.Name):
            for origin, value in self.assigned_values(expr):
                if value is not None:
                    out |= self.object_origins(value, depth + 1)
                elif isinstance(origin, cst.Param):
                    for arg in self.parameter_values(origin, depth):
                        out |= self.object_origins(arg, depth + 1)
        elif isinstance(expr, cst.Attribute):
            for value in self.assigned_attribute_values(expr, depth + 1):
                out |= self.object_origins(value, depth + 1)
        return out

    def assigned_attribute_values(self, expr: cst.Attribute, depth: int = 0) -> List[cst.BaseExpression]:
        """Values this module assigns to the attribute ``expr`` reads on an
        object it made (``model.loss_func = BinaryCrossentropy()``, read back
        as ``model.loss_func`` in a function the model is passed to): the
        assignments whose target is that attribute of the same object."""
        origins = self.object_origins(expr.value, depth)
        if not origins:
            return []
        return [assign.value for assign in self.assigns for target in assign.targets
                if isinstance(target.target, cst.Attribute) and target.target.attr.value == expr.attr.value
                and not (isinstance(target.target.value, cst.Name) and target.target.value.value == "self")
                and self.object_origins(target.target.value, depth) & origins]

    def is_import_binding(self, expr: cst.BaseExpression) -> bool:
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return False
        refs = self.scopes.lookup(expr)
        return bool(refs) and all(isinstance(r.node, (cst.Import, cst.ImportFrom)) or r.imported for r in refs)

    def local_functions(self, name: cst.Name, depth: int = 0) -> List[cst.FunctionDef]:
        """The functions of this module a name may hold: one it defines, or,
        for a parameter, those this module's calls pass for it by name
        (``run_epoch(train_step, ...)`` makes ``step_fn(batch)`` in
        ``def run_epoch(step_fn, ...)`` a call of ``train_step``), or another
        name bound to one (``fn = train_step``), or a method passed
        (``self.run_epoch(self.train_step, ...)``)."""
        out: List[cst.FunctionDef] = []
        for origin, value in self.assigned_values(name):
            if isinstance(origin, cst.FunctionDef):
                out.append(origin)
            elif isinstance(origin, cst.Name) and isinstance(self.parent(origin), cst.FunctionDef):
                out.append(self.parent(origin))
            elif value is not None and depth < 4:  # fn = train_step, step = self.train_step
                out += [f for f in self._functions_named(value, depth + 1) if f not in out]
            elif isinstance(origin, cst.Param) and depth < 4:
                for arg in self.parameter_values(origin, depth):
                    out += [f for f in self._functions_named(arg, depth + 1) if f not in out]
        return out

    def _functions_named(self, expr: cst.BaseExpression, depth: int) -> List[cst.FunctionDef]:
        """The functions of this module an expression names: a function (:meth:`local_functions`),
        or a method of an instance of a user class (``self.train_step``, ``trainer.step``)."""
        if isinstance(expr, cst.Name):
            return self.local_functions(expr, depth)
        if isinstance(expr, cst.Attribute):
            return [f for cd in self.instance_classes(expr.value) for f in self.class_methods(cd, expr.attr.value)]
        return []

    def parameter_values(self, param: cst.Param, depth: int = 0) -> List[cst.BaseExpression]:
        """What a parameter can be bound to by this module's calls: every
        argument passed for it (:meth:`argument_values`), and its default
        when a call of the function by its name leaves it out."""
        out = [arg for _call, arg in self.argument_values(param, depth)]
        fdef = next((x for x in self.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if param.default is not None and fdef is not None and self.method_owner(fdef) is None and len(out) < len(
                [c for c in self.calls_by_name(fdef) if not any(x.star for x in c.args)]):
            out.append(param.default)
        return out

    def calls_by_name(self, fdef: cst.FunctionDef) -> List[cst.Call]:
        """The calls of a function of this module by its name (``f(...)``)."""
        found = self._name_calls.get(id(fdef))
        if found is None:
            found = self._name_calls[id(fdef)] = [
                c for c in self.calls if isinstance(c.func, cst.Name) and c.func.value == fdef.name.value
                and fdef in self.local_functions(c.func)]
        return found

    def argument_values(self, param: cst.Param, depth: int = 0) -> List[Tuple[cst.Call, cst.BaseExpression]]:
        """(call, argument) for each call of this module that binds param:
        calls of a local function by name, ``Class(...)`` for ``__init__``,
        ``obj.method(...)`` / ``self.method(...)`` for methods."""
        fdef = next((x for x in self.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if fdef is None or depth > 6:
            return []
        params = list(fdef.params.params)
        if param not in params:
            return []
        index = params.index(param)
        owner = self.method_owner(fdef)
        if owner is not None and index == 0:  # self
            return []
        index -= owner is not None
        out: List[Tuple[cst.Call, cst.BaseExpression]] = []
        for call in self._calls_of(fdef, depth):
            arg = self.argument_of(call, index, param.name.value)
            if arg is not None:
                out.append((call, arg))
        return out

    def keyword_values(self, star: cst.Param, key: str) -> List[Tuple[cst.Call, cst.BaseExpression]]:
        """(call, argument) for each call of this module passing ``key=...`` into the ``**``
        parameter ``star`` (``model.compile(loss_weights={...})`` for ``def compile(self,
        **kwargs)`` reading ``kwargs.pop("loss_weights", ...)``)."""
        fdef = next((x for x in self.ancestors(star) if isinstance(x, cst.FunctionDef)), None)
        if fdef is None or fdef.params.star_kwarg is not star:
            return []
        named = {p.name.value for p in list(fdef.params.params) + list(fdef.params.kwonly_params)}
        if key in named:
            return []
        return [(call, arg.value) for call in self._calls_of(fdef, 0) for arg in call.args
                if arg.keyword is not None and arg.keyword.value == key]

    def _calls_of(self, fdef: cst.FunctionDef, depth: int) -> List[cst.Call]:
        """The calls of this module running fdef: ``Class(...)`` for ``__init__``,
        ``obj.method(...)`` / ``self.method(...)`` for methods, by name for functions."""
        owner = self.method_owner(fdef)
        if owner is None:
            return list(self.calls_by_name(fdef))
        out = []
        for call in self.calls:
            if fdef.name.value == "__init__":
                fact = self.class_of(call.func)
                if fact is None or fact.node is None or not self.is_subclass_or_same(fact.node, owner):
                    continue
            elif not (isinstance(call.func, cst.Attribute) and call.func.attr.value == fdef.name.value
                      and fdef in self.methods_called(call, depth + 1)):
                continue
            out.append(call)
        return out

    def tuple_element_values(self, target: cst.CSTNode, depth: int = 0) -> List[cst.BaseExpression]:
        """The values a name bound as one element of a tuple assignment
        gets: ``a`` in ``a, b = x, y`` (x), in ``a, b = make()`` with
        ``make`` returning tuple literals (the matching element of each)."""
        over = self.written_out_loop_values(target)
        if over is not None:
            return over
        position = self.unpacked_position(target)
        if position is None or depth > 8:
            return []
        assign, index, size = position
        values: List[cst.BaseExpression] = []
        candidates = [assign.value]
        if isinstance(assign.value, cst.Name):
            # g, d, gan = models: what models holds -- a tuple bound to it, or passed in for it
            candidates = []
            for origin, value in self.assigned_values(assign.value):
                if isinstance(origin, cst.Param):
                    candidates += [arg for _call, arg in self.argument_values(origin, depth + 1)]
                elif value is not None:
                    candidates.append(value)
            for value in [v for v in candidates if isinstance(v, cst.Name)]:
                candidates += [v for _o, v in self.assigned_values(value) if v is not None]
        candidates = [ret for value in candidates for ret in (
            [r for fdef in self.local_functions(value.func) for r in returned_values(fdef)]
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) else
            [r for fdef in self.methods_called(value, depth + 1) for r in returned_values(fdef)]
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) else [value])]
        for value in [v for v in candidates if isinstance(v, cst.Name)]:  # return models: the tuple bound to it
            candidates += [v for _o, v in self.assigned_values(value) if isinstance(v, (cst.Tuple, cst.List))]
        for value in candidates:
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == size \
                    and not any(isinstance(e, cst.StarredElement) for e in value.elements):
                values.append(value.elements[index].value)
        return values

    def unpacked_position(self, target: cst.CSTNode) -> Optional[Tuple[cst.Assign, int, int]]:
        """(the assignment, the element's index, the tuple's size) when
        ``target`` is one element of a tuple or list unpacked by a one-target
        assignment without a starred element (``a, b = make()``); else None."""
        element = self.parent(target)
        tup = self.parent(element) if isinstance(element, cst.Element) else None
        assign_target = self.parent(tup) if isinstance(tup, (cst.Tuple, cst.List)) else None
        assign = self.parent(assign_target) if isinstance(assign_target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 \
                or any(isinstance(e, cst.StarredElement) for e in tup.elements):
            return None
        return assign, next(i for i, e in enumerate(tup.elements) if e is element), len(tup.elements)

    def written_out_loop_values(self, target: cst.CSTNode) -> Optional[List[cst.BaseExpression]]:
        """The values a ``for`` target takes over a tuple or list written out
        in place: ``opt`` in ``for opt in (opt_a, opt_b):`` (both), ``optimizer``
        in ``for layers, optimizer in ((lower, opt_a), (upper, opt_b)):`` (the
        second of each pair). None when target is not such a loop's."""
        parent = self.parent(target)
        if isinstance(parent, cst.For) and parent.target is target:
            loop, index = parent, None
        else:
            tup = self.parent(parent) if isinstance(parent, cst.Element) else None
            loop = self.parent(tup) if isinstance(tup, (cst.Tuple, cst.List)) else None
            if not isinstance(loop, cst.For) or loop.target is not tup \
                    or any(isinstance(e, cst.StarredElement) for e in tup.elements):
                return None
            index = next(i for i, e in enumerate(tup.elements) if e is parent)
        rows = loop.iter
        if not isinstance(rows, (cst.Tuple, cst.List)) or not rows.elements \
                or any(not isinstance(e, cst.Element) for e in rows.elements):
            return None
        if index is None:
            return [e.value for e in rows.elements]
        values = []
        for row in rows.elements:
            value = row.value
            if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != len(tup.elements) \
                    or any(not isinstance(e, cst.Element) for e in value.elements):
                return None
            values.append(value.elements[index].value)
        return values

    @staticmethod
    def argument_of(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
        for i, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if any(arg.star for arg in call.args):
            return None
        return positional[index].value if index < len(positional) else None

    def reads_bound_to(self, name: str, value: cst.CSTNode) -> List[cst.Name]:
        """The reads of ``name`` that its binding to ``value`` reaches (no
        binding's target is a read: ``x = ...``, ``with ... as x``, ``for x in``)."""
        reads = self.scopes.access_index  # the Names the scope walk saw used (loaded)
        return [n for n in walk(self.module) if isinstance(n, cst.Name) and n.value == name
                and n in reads and not isinstance(self.parent(n), (cst.AssignTarget, cst.AnnAssign, cst.AugAssign))
                and any(v is value for _, v in self.assigned_values(n))]


# Where a return statement can be, below a function body (expressions cannot hold one).
_STATEMENT_CONTAINERS = (cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine, cst.ExceptHandler,
                         cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)
_STATEMENT_PARTS = _STATEMENT_CONTAINERS + (cst.Return,)


def returned_values(fdef: cst.FunctionDef) -> List[cst.BaseExpression]:
    out: List[cst.BaseExpression] = []
    stack: List[cst.CSTNode] = [fdef.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            if node.value is not None:
                out.append(node.value)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue  # nested functions return for themselves
        elif isinstance(node, _STATEMENT_CONTAINERS):
            stack.extend(reversed([c for c in iter_children(node) if isinstance(c, _STATEMENT_PARTS)]))
    return out
