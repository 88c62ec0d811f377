"""Scopes, bindings and parents of a LibCST module, in one walk.

This computes what tfdist used to take from LibCST's ScopeProvider,
QualifiedNameProvider and ParentNodeProvider -- the same answers, with the
same conventions (``fn.<locals>.x``, ``Cls.method``, ``builtins.print``,
relative imports as ``.pkg.Name``) -- but by reading node fields directly
instead of running visitors that rebuild every node. Those providers were
about half of a whole conversion; this walk is a small fraction of a parse.

Python's scoping rules that matter for name resolution are kept: function,
lambda, class and comprehension scopes; class bodies not visible from
nested scopes; decorators, defaults, annotations and bases evaluated in
the enclosing scope; the first ``for ... in`` iterable of a comprehension
evaluated outside it; ``global`` / ``nonlocal``; walrus targets binding in
the enclosing non-comprehension scope. Like LibCST, it is mostly
flow-insensitive, with LibCST's one concession to order: a use of a name
in the scope that binds it sees only the bindings made by statements that
ended before it (``ds = ds.batch(32)`` reads the earlier ``ds``), falling
back to the enclosing scope when there are none; uses from nested scopes
see every binding. One addition, only when asked (``follow_aliases``):
``tf1 = tf.compat.v1`` as a name's only binding makes ``tf1.Session`` the
qualified name it aliases.
"""
from __future__ import annotations

import builtins
import dataclasses
from typing import Dict, List, Optional, Tuple

import libcst as cst

from .names import dotted, star_import_provides

LOAD, STORE, SKIP, PARAMS, OUTERMOST_FOR = range(5)

# Fields that hold only whitespace, comments or punctuation: never the
# subject of an analysis question, and most of a tree's nodes.
_TOKEN_FIELDS = frozenset({
    "asynchronous", "colon", "comma", "comment", "dot", "empty_lines", "equal", "first_colon", "footer",
    "header", "lbrace", "lbracket", "leading_lines", "leading_whitespace", "lines_after_decorators", "lpar",
    "newline", "operator", "posonly_ind", "rbrace", "rbracket", "relative", "rpar", "second_colon",
    "semicolon", "trailing_comma", "trailing_whitespace",
})
# Node classes whose dataclass fields are not declared in source order:
# the order LibCST visits (and writes) them in. Uses and bindings are
# ordered by it (``except E as e: use(e)``).
_SOURCE_ORDER: Dict[type, Tuple[str, ...]] = {
    cst.Arg: ("keyword", "value"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
}
_FIELDS: Dict[type, Tuple[str, ...]] = {}


def syntax_fields(cls: type) -> Tuple[str, ...]:
    """Names of the fields that can hold syntax (not tokens), in source order."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _SOURCE_ORDER.get(cls) or tuple(
            f.name for f in dataclasses.fields(cls)
            if f.name not in _TOKEN_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[cls] = names
    return names


def iter_children(node: cst.CSTNode):
    """Non-token child nodes, in field order."""
    for name in syntax_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (tuple, list)):
            for child in value:
                if isinstance(child, cst.CSTNode):
                    yield child


def walk(node: cst.CSTNode):
    """node and every syntax node below it, in source order (tokens skipped).

    What a CSTVisitor would reach, minus whitespace and punctuation, without
    the visitor's per-node overhead.
    """
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = list(iter_children(n))
        children.reverse()
        stack.extend(children)


class Scope:
    __slots__ = ("kind", "parent", "prefix", "bindings", "accesses", "global_decls", "nonlocal_decls", "count",
                 "star_imports")

    def __init__(self, kind: str, parent: Optional["Scope"], name: Optional[str] = None):
        self.kind = kind  # module | class | function | comprehension
        self.parent = parent
        parts: List[Optional[str]] = [parent.prefix if parent else None]
        if kind == "class":
            parts.append(name)
        elif kind == "function":
            parts += [name, "<locals>"]
        elif kind == "comprehension":
            parts.append("<comprehension>")
        self.prefix = ".".join(p for p in parts if p)
        self.bindings: Dict[str, List["Binding"]] = {}
        self.accesses: Dict[str, List[cst.Name]] = {}
        self.global_decls: set = set()
        self.nonlocal_decls: set = set()
        # Ends of assignment-like statements so far (LibCST's _assignment_count).
        self.count = 0
        # ``from module import *`` (module scope only): (count then, module, the ImportFrom).
        self.star_imports: List[Tuple[int, str, cst.ImportFrom]] = []


class Binding:
    """One way a name gets a value in a scope.

    ``node`` follows LibCST's Assignment.node: the Name for plain targets,
    the Param for parameters, the FunctionDef/ClassDef for definitions, the
    Import/ImportFrom for imports, None for builtins.
    """

    __slots__ = ("name", "scope", "node", "imported", "index")

    def __init__(self, name: str, scope: Optional[Scope], node: Optional[cst.CSTNode], imported: Optional[str] = None):
        self.name = name
        self.scope = scope
        self.node = node
        self.imported = imported  # for imports: the qualified name the local name stands for
        self.index = scope.count if scope is not None else -1

    def qualified_name(self, full_name: str, rest: str) -> str:
        if self.imported is not None:
            return self.imported + rest
        if self.scope is None:  # builtin; LibCST drops the attribute chain here too
            return "builtins." + self.name
        return f"{self.scope.prefix}.{full_name}" if self.scope.prefix else full_name


_BUILTINS: Dict[str, List[Binding]] = {}


def _builtin(name: str) -> List[Binding]:
    found = _BUILTINS.get(name)
    if found is None:
        found = _BUILTINS[name] = [Binding(name, None, None)] if hasattr(builtins, name) else []
    return found


class ModuleScopes:
    """The walk's results: parents, scopes of names, and every binding."""

    def __init__(self, module: cst.Module):
        self.parents: Dict[cst.CSTNode, cst.CSTNode] = {}
        self.scope_of: Dict[cst.Name, Scope] = {}
        self.access_index: Dict[cst.Name, int] = {}  # uses (loads) -> their scope's count then
        self.module_scope = Scope("module", None)
        self.by_type: Dict[type, List[cst.CSTNode]] = {}
        self._star_bindings: Dict[str, List[Binding]] = {}
        self._walk(module)

    # ------------------------------------------------------------ queries
    def lookup(self, name: cst.Name) -> List[Binding]:
        """The bindings a Name can refer to.

        For a use, as LibCST's Access.referents; for any other Name (a
        target), every binding visible from its scope.
        """
        scope = self.scope_of.get(name)
        if scope is None:
            return []
        found = self._lookup(scope, name.value)
        index = self.access_index.get(name)
        if index is None or not found or found[0].scope is not scope:
            return found
        earlier = [b for b in found if b.index < index]
        if earlier:
            return earlier
        # Only later bindings here: the name means what it means outside.
        parent = scope.parent
        if parent is None:
            return _builtin(name.value)
        return parent.bindings.get(name.value) or self._lookup(parent, name.value)

    def _lookup(self, scope: Scope, name: str) -> List[Binding]:
        if name in scope.global_decls:
            return self.module_scope.bindings.get(name) or self._unbound(name)
        s: Optional[Scope] = scope
        first = True
        while s is not None:
            # A class body is visible to itself only, not to nested scopes.
            if first or s.kind != "class":
                found = s.bindings.get(name)
                if found:
                    return found
            first = False
            s = s.parent
        return self._unbound(name)

    def _unbound(self, name: str) -> List[Binding]:
        """A name no statement binds: a builtin, or a name a star import of
        a TensorFlow or Keras module binds (``from tensorflow.keras.optimizers
        import *`` then ``Adam(...)``), as far as that can be known."""
        found = _builtin(name)
        if found:
            return found
        cached = self._star_bindings.get(name)
        if cached is None:
            cached = self._star_bindings[name] = []
            stars = self.module_scope.star_imports
            for index, module, node in reversed(stars):  # the last one binding it wins
                provides = star_import_provides(module, name, only_star_import=len(stars) == 1)
                if provides is None:
                    break  # it may bind the name itself: unknown
                if provides:
                    binding = Binding(name, self.module_scope, node, f"{module}.{name}")
                    binding.index = index
                    cached.append(binding)
                    break
        return cached

    def qualified(self, node: cst.CSTNode, follow_aliases: bool = False) -> set:
        """LibCST-style qualified names of a Name / Attribute chain / Call's callee.

        A Name that is a use resolves as the use does; an attribute chain or
        a call (not uses themselves, for LibCST) through every binding of
        its first name visible from where it is written.

        With ``follow_aliases`` (beyond LibCST), a name whose only binding is
        ``name = a.b.c`` of an imported module or class stands for what it
        is assigned: after ``tf1 = tf.compat.v1``, ``tf1.Session`` is
        ``tensorflow.compat.v1.Session``, not a local name.
        """
        if isinstance(node, cst.Call):
            node = node.func
        full = dotted(node)
        if full is None:
            return set()
        bindings = self._bindings_of_chain(node)
        head, dot, tail = full.partition(".")
        rest = dot + tail
        out = set()
        for b in bindings:
            target = self._imported_names(self._alias_value(b), 1) if follow_aliases else None
            if target:
                out |= {n + rest for n in target}
            else:
                out.add(b.qualified_name(full, rest))
        return out

    def _bindings_of_chain(self, node: cst.CSTNode) -> List[Binding]:
        if isinstance(node, cst.Name):
            bindings = self.lookup(node)
            own = [b for b in bindings if b.node is node]
            return own or bindings  # a target names what it binds, not the name's other values
        base = node
        while isinstance(base, cst.Attribute):
            base = base.value
        scope = self.scope_of.get(base)
        return self._lookup(scope, base.value) if scope is not None else []

    def _alias_value(self, b: Binding) -> Optional[cst.BaseExpression]:
        """``a.b.c`` when b is the only binding of its name and is ``name = a.b.c``."""
        node = b.node
        if b.imported is not None or b.scope is None or not isinstance(node, cst.Name):
            return None
        if len(b.scope.bindings.get(b.name, ())) != 1:
            return None  # rebound somewhere: not an alias we can trust
        target = self.parents.get(node)
        assign = self.parents.get(target)
        if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign) and len(assign.targets) == 1):
            return None
        value = assign.value
        return value if isinstance(value, (cst.Name, cst.Attribute)) and dotted(value) is not None else None

    def _imported_names(self, chain: Optional[cst.BaseExpression], depth: int) -> Optional[set]:
        """Qualified names of a dotted chain whose first name is bound only by
        imports (or by aliases of them); None otherwise."""
        if chain is None or depth > 4:
            return None
        bindings = self._bindings_of_chain(chain)
        if not bindings:
            return None
        head, dot, tail = dotted(chain).partition(".")
        rest = dot + tail
        out = set()
        for b in bindings:
            if b.imported is not None:
                out.add(b.imported + rest)
                continue
            inner = self._imported_names(self._alias_value(b), depth + 1)
            if inner is None:
                return None
            out |= {n + rest for n in inner}
        return out

    def references(self, binding_node: cst.CSTNode) -> List[cst.Name]:
        """Every use (load) of the name bound at binding_node (a target Name)."""
        scope = self.scope_of.get(binding_node) if isinstance(binding_node, cst.Name) else None
        if scope is None:
            return []
        name = binding_node.value
        owner = next((b.scope for b in self._lookup(scope, name) if b.node is binding_node), None)
        if owner is None:
            return []
        # Uses live in the scope they are written in: the owner or one below it.
        return [use for s in self._all_scopes if _is_within(s, owner) for use in s.accesses.get(name, ())
                if any(b.node is binding_node for b in self.lookup(use))]

    def is_load(self, name: cst.Name) -> bool:
        """Is this name read where it stands (not only bound: an assignment's,
        a loop's or a ``with``'s target; ``x += 1`` reads x too)?"""
        loads = self.__dict__.get("_load_ids")
        if loads is None:
            loads = self.__dict__["_load_ids"] = {id(use) for s in self._all_scopes for uses in s.accesses.values()
                                                  for use in uses}
        return id(name) in loads or isinstance(self.parents.get(name), cst.AugAssign)

    # -------------------------------------------------------------- walk
    def _bind(self, scope: Scope, name: str, node, imported: Optional[str] = None) -> None:
        if name in scope.global_decls:
            scope = self.module_scope
        elif name in scope.nonlocal_decls:
            s = scope.parent
            while s is not None and not (s.kind == "function" and name in s.bindings):
                s = s.parent
            scope = s or scope
        scope.bindings.setdefault(name, []).append(Binding(name, scope, node, imported))

    def _walk(self, module: cst.Module) -> None:
        parents = self.parents
        scope_of = self.scope_of
        by_type = self.by_type
        self._all_scopes: List[Scope] = [self.module_scope]
        Name = cst.Name
        access_index = self.access_index
        stack: List[Tuple[cst.CSTNode, Scope, int]] = [(module, self.module_scope, LOAD)]
        handlers = _HANDLERS
        while stack:
            node, scope, role = stack.pop()
            if node is _COUNT:  # the end of an assignment-like node
                scope.count += 1
                continue
            cls = type(node)
            if cls is Name:
                if role == LOAD:
                    scope_of[node] = scope
                    access_index[node] = scope.count
                    scope.accesses.setdefault(node.value, []).append(node)
                elif role == STORE:
                    scope_of[node] = scope
                    self._bind(scope, node.value, node)
                continue
            lst = by_type.get(cls)
            if lst is None:
                lst = by_type[cls] = []
            lst.append(node)
            handler = handlers.get(cls)
            if handler is not None:
                pushed = handler(self, node, scope, role)
            else:
                child_role = role if (role == STORE and cls in _STORE_CONTAINERS) else LOAD
                pushed = [(c, scope, child_role) for c in iter_children(node)]
            if cls in _ASSIGNMENT_LIKE:
                stack.append((_COUNT, scope, LOAD))  # pops after the children: counts the node's end
            # reversed, so that children pop in the order LibCST visits them
            for item in reversed(pushed):
                if item[0] is not None:
                    parents[item[0]] = node
                stack.append(item)

    def _new_scope(self, kind: str, parent: Scope, name: Optional[str] = None) -> Scope:
        s = Scope(kind, parent, name)
        self._all_scopes.append(s)
        return s


def _is_within(s: Optional[Scope], outer: Scope) -> bool:
    while s is not None:
        if s is outer:
            return True
        s = s.parent
    return False


_STORE_CONTAINERS = {cst.Tuple, cst.List, cst.Element, cst.StarredElement}
# Nodes whose end LibCST counts as an assignment point (its _ASSIGNMENT_LIKE_NODES).
_ASSIGNMENT_LIKE = {
    cst.AnnAssign, cst.AsName, cst.Assign, cst.AugAssign, cst.ClassDef, cst.CompFor, cst.FunctionDef,
    cst.Global, cst.Import, cst.ImportFrom, cst.NamedExpr, cst.Nonlocal, cst.Parameters, cst.WithItem,
}
_COUNT = None  # a stack item (None, scope, _) counts an assignment point in scope


def _h_function(w: ModuleScopes, node, scope, role):
    is_def = isinstance(node, cst.FunctionDef)
    if is_def:
        w._bind(scope, node.name.value, node)
        w.scope_of[node.name] = scope
    inner = w._new_scope("function", scope, node.name.value if is_def else None)
    # LibCST's order: parameters and body, then decorators and return annotation.
    out = [(node.name, scope, SKIP)] if is_def else []
    out.append((node.params, inner, PARAMS))
    out.append((node.body, inner, LOAD))
    if is_def:
        out += [(d, scope, LOAD) for d in node.decorators]
        if node.returns is not None:
            out.append((node.returns, scope, LOAD))
    return out


def _h_parameters(w, node, scope, role):
    return [(c, scope, PARAMS) for c in iter_children(node)]  # a ParamStar has no name to bind


def _h_param(w, node, scope, role):
    # scope is the function's own; defaults and annotations belong outside.
    w._bind(scope, node.name.value, node)
    out = [(node.name, scope, SKIP)]
    if node.annotation is not None:
        out.append((node.annotation, scope.parent, LOAD))
    if node.default is not None:
        out.append((node.default, scope.parent, LOAD))
    return out


def _h_class(w: ModuleScopes, node: cst.ClassDef, scope, role):
    w._bind(scope, node.name.value, node)
    w.scope_of[node.name] = scope
    inner = w._new_scope("class", scope, node.name.value)
    out = [(node.name, scope, SKIP)]
    out += [(d, scope, LOAD) for d in node.decorators]
    out += [(a, scope, LOAD) for a in node.bases]
    out += [(a, scope, LOAD) for a in node.keywords]
    out.append((node.body, inner, LOAD))
    return out


def _h_comprehension(w: ModuleScopes, node, scope, role):
    inner = w._new_scope("comprehension", scope)
    # The for clauses first (the outermost one's iterable is evaluated
    # outside), then the element.
    out = [(node.for_in, inner, OUTERMOST_FOR)]
    for name in ("key", "value") if isinstance(node, cst.DictComp) else ("elt",):
        out.append((getattr(node, name), inner, LOAD))
    return out


def _h_compfor(w: ModuleScopes, node: cst.CompFor, scope, role):
    if role == OUTERMOST_FOR:
        out = [(node.iter, scope.parent, LOAD), (node.target, scope, STORE), (_COUNT, scope, LOAD)]
    else:
        out = [(node.target, scope, STORE), (node.iter, scope, LOAD)]
    out += [(i, scope, LOAD) for i in node.ifs]
    if node.inner_for_in is not None:
        out.append((node.inner_for_in, scope, LOAD))
    return out


def _h_import(w: ModuleScopes, node, scope, role):
    out = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                w._bind(scope, alias.asname.name.value, node, full)
            else:
                head = full.split(".")[0]
                w._bind(scope, head, node, head)
            out.append((alias, scope, SKIP))
        return out
    module = dotted(node.module) if node.module is not None else ""
    dots = "." * len(node.relative)
    source = dots + (module or "")
    if isinstance(node.names, cst.ImportStar):
        if scope is w.module_scope and not node.relative:
            scope.star_imports.append((scope.count, source, node))
    else:
        for alias in node.names:
            real = dotted(alias.name) or ""
            imported = f"{source}{real}" if source.endswith(".") or not source else f"{source}.{real}"
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else real
            w._bind(scope, local, node, imported)
            out.append((alias, scope, SKIP))
    if node.module is not None:
        out.append((node.module, scope, SKIP))
    return out


def _h_skip_all(w, node, scope, role):
    return [(c, scope, SKIP) for c in iter_children(node)]


def _h_global(w: ModuleScopes, node, scope, role):
    decls = scope.global_decls if isinstance(node, cst.Global) else scope.nonlocal_decls
    for item in node.names:
        decls.add(item.name.value)
    return [(item, scope, SKIP) for item in node.names]


def _h_assign(w, node: cst.Assign, scope, role):
    return [(t, scope, LOAD) for t in node.targets] + [(node.value, scope, LOAD)]


def _h_assign_target(w, node: cst.AssignTarget, scope, role):
    return [(node.target, scope, STORE)]


def _h_ann_assign(w, node: cst.AnnAssign, scope, role):
    out = [(node.target, scope, STORE), (node.annotation, scope, LOAD)]
    if node.value is not None:
        out.append((node.value, scope, LOAD))
    return out


def _h_aug_assign(w: ModuleScopes, node: cst.AugAssign, scope, role):
    return [(node.target, scope, STORE), (node.value, scope, LOAD)]


def _h_for(w, node: cst.For, scope, role):
    # The target counts as assigned before the iterable and body (LibCST).
    out = [(node.target, scope, STORE), (_COUNT, scope, LOAD), (node.iter, scope, LOAD), (node.body, scope, LOAD)]
    if node.orelse is not None:
        out.append((node.orelse, scope, LOAD))
    return out


def _h_asname(w, node: cst.AsName, scope, role):
    # With items and except handlers (import aliases are SKIP).
    return [(node.name, scope, SKIP if role == SKIP else STORE)]


def _h_named_expr(w, node: cst.NamedExpr, scope, role):
    target_scope = scope
    while target_scope.kind == "comprehension" and target_scope.parent is not None:
        target_scope = target_scope.parent
    return [(node.target, target_scope, STORE), (node.value, scope, LOAD)]


def _h_attribute(w, node: cst.Attribute, scope, role):
    return [(node.value, scope, LOAD), (node.attr, scope, SKIP)]


def _h_arg(w, node: cst.Arg, scope, role):
    out = [(node.value, scope, LOAD)]
    if node.keyword is not None:
        out.append((node.keyword, scope, SKIP))
    return out


_HANDLERS = {
    cst.FunctionDef: _h_function,
    cst.Lambda: _h_function,
    cst.Parameters: _h_parameters,
    cst.Param: _h_param,
    cst.ClassDef: _h_class,
    cst.ListComp: _h_comprehension,
    cst.SetComp: _h_comprehension,
    cst.GeneratorExp: _h_comprehension,
    cst.DictComp: _h_comprehension,
    cst.CompFor: _h_compfor,
    cst.Import: _h_import,
    cst.ImportFrom: _h_import,
    cst.ImportAlias: _h_skip_all,
    cst.Global: _h_global,
    cst.Nonlocal: _h_global,
    cst.Assign: _h_assign,
    cst.AssignTarget: _h_assign_target,
    cst.AnnAssign: _h_ann_assign,
    cst.AugAssign: _h_aug_assign,
    cst.For: _h_for,
    cst.AsName: _h_asname,
    cst.NamedExpr: _h_named_expr,
    cst.Attribute: _h_attribute,
    cst.Arg: _h_arg,
}
