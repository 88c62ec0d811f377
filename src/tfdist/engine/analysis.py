"""Facts about one module: what names mean, class hierarchy, value types.

Type inference is deliberately small and flow-insensitive: a name's type is
the union of the types of every value assigned to it in its scope. That is
enough to know that ``model`` in ``model.fit(...)`` is a Keras model built by
``keras.Sequential``, by a user subclass of ``keras.Model`` (several levels
deep, or in a sibling module), or by a factory function in the file that
returns one -- and it never guesses: an unknown value has no type.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Mapping, Optional, Set, Tuple

import libcst as cst

from .. import apis
from . import positions
from .names import canonical
from .reaching import Reaching
from .scopes import ModuleScopes, iter_children, walk

# Kinds of objects tfdist tracks.
MODEL = "keras.Model"
KERAS_OPTIMIZER = "keras optimizer"
TF1_OPTIMIZER = "tf1 optimizer"
SCHEDULE = "learning-rate schedule"
DATASET = "tf.data.Dataset"
CALLBACK = "keras callback"
SEQUENCE = "keras Sequence"
SESSION = "tf.Session"
MONITORED_SESSION = "MonitoredSession"
TAPE = "GradientTape"
FILE_WRITER = "summary writer"
TF1_FILE_WRITER = "tf1 FileWriter"
CHECKPOINT = "checkpoint"
SAVER = "tf1 Saver"
CONFIG_PROTO = "ConfigProto"
MODULE = "tf.Module"
# An instance of a class defined in the user's code (its methods and self
# attributes are followed).
INSTANCE = "instance"
TUTORIAL_DATASETS = "tf1 tutorial data sets"  # read_data_sets(): .train/.test with next_batch()

# Framework base classes -> the kind their subclasses have.
_ROOT_KINDS: Dict[str, str] = {}
for _n in apis.KERAS_MODEL_CLASSES:
    _ROOT_KINDS[_n] = MODEL
for _n in list(apis.KERAS_OPTIMIZER_BASES) + list(apis.KERAS_OPTIMIZERS) + list(apis.KERAS_LEGACY_OPTIMIZERS):
    _ROOT_KINDS[_n] = KERAS_OPTIMIZER
for _n in list(apis.TF1_OPTIMIZER_BASES) + list(apis.TF1_OPTIMIZERS):
    _ROOT_KINDS[_n] = TF1_OPTIMIZER
for _n in apis.KERAS_CALLBACK_BASES:
    _ROOT_KINDS[_n] = CALLBACK
for _n in apis.TF_MODULE_BASES:
    _ROOT_KINDS[_n] = MODULE
for _n in apis.KERAS_LR_SCHEDULE_BASES:
    _ROOT_KINDS[_n] = SCHEDULE
for _n in apis.KERAS_SEQUENCE_BASES:
    _ROOT_KINDS[_n] = SEQUENCE

# Constructors / factories -> kind of the value they return.
_CALL_KINDS: Dict[str, str] = dict(_ROOT_KINDS)
_CALL_KINDS.update({n: MODEL for n in apis.KERAS_MODEL_FACTORIES})
_CALL_KINDS.update({n: SCHEDULE for n in apis.KERAS_LR_SCHEDULES})
_CALL_KINDS.update({n: DATASET for n in apis.DATASET_SOURCES})
_CALL_KINDS.update({n: DATASET for n in apis.DATASET_COMBINERS})
_CALL_KINDS.update({n: DATASET for n in apis.DATASET_CLASS_CALLS})
_CALL_KINDS.update({n: SEQUENCE for n in apis.KERAS_SEQUENCE_CLASSES})
_CALL_KINDS.update({n: SESSION for n in apis.TF1_SESSIONS})
_CALL_KINDS.update({n: CALLBACK for n in apis.TRACKER_KERAS_CALLBACKS})
_CALL_KINDS.update({n: MONITORED_SESSION for n in apis.TF1_MONITORED_SESSIONS})
_CALL_KINDS[apis.GRADIENT_TAPE] = TAPE
_CALL_KINDS[apis.TF2_FILE_WRITER] = FILE_WRITER
_CALL_KINDS[apis.TF1_FILE_WRITER] = TF1_FILE_WRITER
_CALL_KINDS[apis.TF2_CHECKPOINT] = CHECKPOINT
_CALL_KINDS[apis.TF2_CHECKPOINT_MANAGER] = CHECKPOINT
_CALL_KINDS[apis.TF1_SAVER] = SAVER
_CALL_KINDS[apis.TF1_CONFIG_PROTO] = CONFIG_PROTO
_CALL_KINDS.update({n: TUTORIAL_DATASETS for n in apis.TF1_TUTORIAL_DATASETS})


@dataclass(frozen=True, eq=True)
class Type:
    kind: str
    name: str = ""  # canonical class / constructor name
    # where the value was constructed (a cst.Call), compared by identity
    call: Optional[cst.Call] = field(default=None, compare=False, hash=False)


@dataclass
class ClassFact:
    name: str  # qualified within its module ("Net", "make.<locals>.Net")
    kinds: Set[str]
    chain: List[str]  # ["Net", "BaseNet", "tensorflow.keras.Model"]
    node: Optional[cst.ClassDef] = None

    def describe(self) -> str:
        return " <: ".join(self.chain)


@dataclass
class ProjectContext:
    """What the rest of a project tells about one of its modules."""

    module_name: Optional[str] = None  # dotted name, to resolve relative imports
    is_package: bool = False  # the module is a package's __init__.py
    # absolute qualified name ("nets.Net") -> fact from the module defining it
    classes: Mapping[str, ClassFact] = field(default_factory=dict)
    # absolute qualified name of a function or class another module of the
    # project defines at its top level ("data.make_dataset") -> (that
    # module's dotted name, its source): a rule follows a helper, or a
    # method of an instance of the class, into it without reading files
    functions: Mapping[str, Tuple[str, bytes]] = field(default_factory=dict)

    def absolute(self, qualified: str) -> str:
        if not qualified.startswith(".") or not self.module_name:
            return qualified
        dots = len(qualified) - len(qualified.lstrip("."))
        parts = self.module_name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if dots > 1:
            parts = parts[: len(parts) - (dots - 1)] if dots - 1 <= len(parts) else []
        rest = qualified[dots:]
        return ".".join([*parts, rest]) if parts else rest


class Analysis:
    def __init__(self, module: cst.Module, project: Optional[ProjectContext] = None):
        self.module = module
        self.project = project or ProjectContext()
        self.scopes = ModuleScopes(module)  # parents, scopes, bindings: one walk
        self.reaching = Reaching(self.scopes)  # which of them reach a use
        self._parents = self.scopes.parents
        self._pos, self.text = positions.compute(module)  # the text is module.code
        by_type = self.scopes.by_type

        def ordered(*types):
            nodes = [n for t in types for n in by_type.get(t, ())]
            nodes.sort(key=self._start)
            return nodes

        self.calls: List[cst.Call] = ordered(cst.Call)
        self.withs: List[cst.With] = ordered(cst.With)
        self.classdefs: List[cst.ClassDef] = ordered(cst.ClassDef)
        self.functions: Dict[str, List[cst.FunctionDef]] = {}
        for fdef in ordered(cst.FunctionDef):
            self.functions.setdefault(fdef.name.value, []).append(fdef)
        self.for_loops: List[cst.For] = ordered(cst.For)
        self.while_loops: List[cst.While] = ordered(cst.While)
        self.assigns: List[cst.Assign] = ordered(cst.Assign)
        self.imports: List[cst.CSTNode] = ordered(cst.Import, cst.ImportFrom)
        self.classes: Dict[str, ClassFact] = {}
        for cd in self.classdefs:
            self._class_fact(cd, set())
        self._type_cache: Dict[int, Set[Type]] = {}
        self._name_calls: Dict[int, List[cst.Call]] = {}  # id(FunctionDef) -> its calls by name
        self._code_cache: Dict[cst.CSTNode, str] = {}

    def _start(self, node: cst.CSTNode):
        # Source order; of two nodes starting together (``a.b().c()``) the
        # inner, shorter one first.
        return self._pos.get(node) or (0, 0, 0, 0)

    # ---------------------------------------------------------------- basics
    def line(self, node: cst.CSTNode) -> int:
        p = self._pos.get(node)
        return p[0] if p else 0

    def end_line(self, node: cst.CSTNode) -> int:
        p = self._pos.get(node)
        return p[2] if p else 0

    def col(self, node: cst.CSTNode) -> int:
        p = self._pos.get(node)
        return p[1] + 1 if p else 0

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def qualified(self, node: cst.CSTNode) -> Set[str]:
        """Raw qualified names (relative imports made absolute); a method of
        an object a known factory returned is named by the factory's class
        (:meth:`_instance_method_names`)."""
        out = {self.project.absolute(q) for q in self.scopes.qualified(node, follow_aliases=True)}
        return out | self._instance_method_names(node)

    def _instance_method_names(self, node: cst.CSTNode) -> Set[str]:
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

    def names(self, node: cst.CSTNode) -> Set[str]:
        """Canonical qualified names of a Name/Attribute/Call (its callee)."""
        if isinstance(node, cst.Call):
            node = node.func
        return {canonical(q) for q in self.qualified(node)}

    def is_name(self, node: cst.CSTNode, table) -> Optional[str]:
        for n in sorted(self.names(node)):
            if n in table:
                return n
        return None

    def code(self, node: cst.CSTNode) -> str:
        # Rules ask for the same nodes' source many times; nodes are immutable.
        text = self._code_cache.get(node)
        if text is None:
            text = self._code_cache[node] = self.module.code_for_node(node)
        return text

    def enclosing_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        for a in self.ancestors(node):
            if isinstance(a, cst.FunctionDef):
                return a
        return None

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
        """The statement, directly in a Module or IndentedBlock body, holding node."""
        cur = node
        while cur is not None:
            par = self.parent(cur)
            if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
                par, (cst.Module, cst.IndentedBlock)
            ):
                return cur
            cur = par
        return None

    def block_of(self, stmt: cst.BaseStatement):
        return self.parent(stmt)

    # ------------------------------------------------------- class hierarchy
    def _class_qualname(self, cd: cst.ClassDef) -> str:
        for q in self.qualified(cd.name):
            return q
        return cd.name.value

    def _class_fact(self, cd: cst.ClassDef, seen: Set[int]) -> ClassFact:
        qual = self._class_qualname(cd)
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
            if c in _ROOT_KINDS:
                return ClassFact(c, {_ROOT_KINDS[c]}, [q])
            if c in self.classes:
                return self.classes[c]
            if q in self.project.classes:
                return self.project.classes[q]
        # A class defined in this module but not analysed yet (forward order).
        if isinstance(expr, cst.Name):
            for cd in self.classdefs:
                if cd.name.value == expr.value and self._class_qualname(cd) in raw:
                    return self._class_fact(cd, seen)
        return None

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
            node = ref.node
            if not isinstance(node, cst.Name):
                out.append((node, None))
                continue
            par = self.parent(node)
            if isinstance(par, cst.AssignTarget):
                assign = self.parent(par)
                if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                    out.append((assign, assign.value))
                    continue
            if isinstance(par, cst.AnnAssign) and par.value is not None:
                out.append((par, par.value))
                continue
            if isinstance(par, cst.AsName):
                item = self.parent(par)
                if isinstance(item, cst.WithItem):
                    out.append((item, item.item))
                    continue
            if isinstance(par, cst.Param):
                out.append((par, None))
                continue
            out.append((node, None))
        out.sort(key=lambda t: self.line(t[0]) if t[0] is not None else 0)
        return out

    def bindings_of(self, name: cst.Name):
        """The scope walk's bindings of name, narrowed for a use to those that reach it."""
        reached = self.reaching.bindings(name)
        return reached if reached is not None else self.scopes.lookup(name)

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
                    out |= self._param_types(origin, depth)
                else:
                    for element in self.tuple_element_values(origin, depth):
                        out |= self.types(element, depth + 1)
            return out
        if isinstance(expr, cst.IfExp):
            return self.types(expr.body, depth + 1) | self.types(expr.orelse, depth + 1)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            # nets[0] of nets = [NN(), NN(bn=True)]: one of the list's elements
            out = set()
            for element in self._display_elements(expr.value):
                out |= self.types(element, depth + 1)
            return out
        if isinstance(expr, cst.Attribute):
            out = set()
            for cd in self.instance_classes(expr.value, depth):
                for value in self.attribute_values(cd, expr.attr.value):
                    out |= self.types(value, depth + 1)
            if not out:
                for value in self.module_attribute_values(expr):
                    out |= self.types(value, depth + 1)
            return out
        return set()

    def _display_elements(self, expr) -> List[cst.BaseExpression]:
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
        if not base or not self._is_import_binding(expr.value):
            return []
        out = []
        for assign in self.assigns:
            for target in assign.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and t.attr.value == expr.attr.value \
                        and self.qualified(t.value) == base:
                    out.append(assign.value)
        return out

    def _is_import_binding(self, expr: cst.BaseExpression) -> bool:
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return False
        refs = self.scopes.lookup(expr)
        return bool(refs) and all(isinstance(r.node, (cst.Import, cst.ImportFrom)) or r.imported for r in refs)

    def _infer_call(self, call: cst.Call, depth: int) -> Set[Type]:
        wrapper = self.is_name(call, apis.KERAS_OPTIMIZER_WRAPPERS)
        if wrapper is not None:
            # LossScaleOptimizer(opt): the optimizer it wraps (its rate, its construction)
            keyword, position = apis.KERAS_OPTIMIZER_WRAPPERS[wrapper]
            inner = self._argument(call, position, keyword)
            return self.types(inner, depth + 1) if inner is not None else set()
        for name in sorted(self.names(call)):
            if name in _CALL_KINDS:
                return {Type(_CALL_KINDS[name], name, call)}
            if name.startswith(apis.KERAS_APPLICATIONS_PREFIX) and name[len(apis.KERAS_APPLICATIONS_PREFIX):][:1].isupper():
                return {Type(MODEL, name, call)}
            if name.startswith(apis.KERAS_PRESET_MODEL_PREFIXES):
                # keras_hub.models.BertTextClassifier(...) / .from_preset(...)
                parts = name.split(".")
                cls = parts[-2] if parts[-1] == "from_preset" else parts[-1]
                if cls[:1].isupper() and not cls.endswith(apis.KERAS_PRESET_NON_MODELS):
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
                for ret in _returns(fdef):
                    out_m |= self.types(ret, depth + 1)
            if out_m:
                return out_m
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in apis.DATASET_METHODS and any(t.kind == DATASET for t in self.types(func.value, depth + 1)):
                return {Type(DATASET, "tensorflow.data.Dataset." + method, call)}
        if isinstance(func, cst.Name):
            out: Set[Type] = set()
            for fdef in self._local_functions(func):
                for ret in _returns(fdef):
                    out |= self.types(ret, depth + 1)
            return out
        return set()

    def _local_functions(self, name: cst.Name) -> List[cst.FunctionDef]:
        out = []
        for origin, _ in self.assigned_values(name):
            if isinstance(origin, cst.FunctionDef):
                out.append(origin)
            elif isinstance(origin, cst.Name) and isinstance(self.parent(origin), cst.FunctionDef):
                out.append(self.parent(origin))
        return out

    def _param_types(self, param: cst.Param, depth: int) -> Set[Type]:
        """A parameter's type: the types passed at this module's call sites,
        and its default's where a call leaves it out."""
        out: Set[Type] = set()
        for value in self.parameter_values(param, depth):
            out |= self.types(value, depth + 1)
        return out

    def parameter_values(self, param: cst.Param, depth: int = 0) -> List[cst.BaseExpression]:
        """What a parameter can be bound to by this module's calls: every
        argument passed for it (:meth:`argument_values`), and its default
        when a call of the function by its name leaves it out."""
        out = [arg for _call, arg in self.argument_values(param, depth)]
        fdef = next((x for x in self.ancestors(param) if isinstance(x, cst.FunctionDef)), None)
        if param.default is not None and fdef is not None and self.method_owner(fdef) is None and len(out) < len(
                [c for c in self._calls_by_name(fdef) if not any(x.star for x in c.args)]):
            out.append(param.default)
        return out

    def _calls_by_name(self, fdef: cst.FunctionDef) -> List[cst.Call]:
        """The calls of a function of this module by its name (``f(...)``)."""
        found = self._name_calls.get(id(fdef))
        if found is None:
            found = self._name_calls[id(fdef)] = [
                c for c in self.calls if isinstance(c.func, cst.Name) and c.func.value == fdef.name.value
                and fdef in self._local_functions(c.func)]
        return found

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
        origins = [origin for origin, _ in bound]
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
                return None
            if isinstance(par, cst.Subscript) and par.value is use:
                index = par.slice[0].slice if len(par.slice) == 1 else None
                if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                    keys.add(str(index.value.evaluated_value))  # read or written: either way a key it may hold
                    continue
                return None
            if isinstance(par, cst.Comparison):
                continue  # "k" in d
            return None
        return keys

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
        calls = self._calls_by_name(fdef)
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
        name = param.name.value
        out: List[Tuple[cst.Call, cst.BaseExpression]] = []
        owner = self.method_owner(fdef)
        if owner is not None:
            if index == 0:  # self
                return []
            for call in self.calls:
                if fdef.name.value == "__init__":
                    fact = self.class_of(call.func)
                    if fact is None or fact.node is None or not self._is_subclass_or_same(fact.node, owner):
                        continue
                elif not (isinstance(call.func, cst.Attribute) and call.func.attr.value == fdef.name.value
                          and fdef in self.methods_called(call, depth + 1)):
                    continue
                arg = self._argument(call, index - 1, name)
                if arg is not None:
                    out.append((call, arg))
            return out
        for call in self._calls_by_name(fdef):
            arg = self._argument(call, index, name)
            if arg is not None:
                out.append((call, arg))
        return out

    def kinds(self, expr: Optional[cst.BaseExpression]) -> Set[str]:
        return {t.kind for t in self.types(expr)}

    def is_kind(self, expr: Optional[cst.BaseExpression], kind: str) -> bool:
        return kind in self.kinds(expr)

    def tuple_element_values(self, target: cst.CSTNode, depth: int = 0) -> List[cst.BaseExpression]:
        """The values a name bound as one element of a tuple assignment
        gets: ``a`` in ``a, b = x, y`` (x), in ``a, b = make()`` with
        ``make`` returning tuple literals (the matching element of each)."""
        over = self._written_out_loop_values(target)
        if over is not None:
            return over
        element = self.parent(target)
        tup = self.parent(element) if isinstance(element, cst.Element) else None
        assign_target = self.parent(tup) if isinstance(tup, (cst.Tuple, cst.List)) else None
        assign = self.parent(assign_target) if isinstance(assign_target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or depth > 8:
            return []
        if any(isinstance(e, cst.StarredElement) for e in tup.elements):
            return []
        index = next(i for i, e in enumerate(tup.elements) if e is element)
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
            [r for fdef in self._local_functions(value.func) for r in _returns(fdef)]
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) else [value])]
        for value in [v for v in candidates if isinstance(v, cst.Name)]:  # return models: the tuple bound to it
            candidates += [v for _o, v in self.assigned_values(value) if isinstance(v, (cst.Tuple, cst.List))]
        for value in candidates:
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(tup.elements) \
                    and not any(isinstance(e, cst.StarredElement) for e in value.elements):
                values.append(value.elements[index].value)
        return values

    def _written_out_loop_values(self, target: cst.CSTNode) -> Optional[List[cst.BaseExpression]]:
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
    def _argument(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
        for i, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if any(arg.star for arg in call.args):
            return None
        return positional[index].value if index < len(positional) else None

    # ------------------------------------------------- user classes, methods
    def method_owner(self, fdef: cst.FunctionDef) -> Optional[cst.ClassDef]:
        """The class a function is a method of: defined directly in its
        body, or attached to it afterwards (``Cls.make_dataset = make_dataset``)."""
        block = self.parent(fdef)
        owner = self.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(owner, cst.ClassDef):
            return owner
        return self._attached()[0].get(id(fdef))

    def _attached(self):
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
            for f in self._local_functions(assign.value):
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
                               and cd in self._lineage(other.node)]
        out = []
        for t in self.types(expr, depth + 1):
            if t.kind == INSTANCE or t.name in self.classes:
                fact = self.classes.get(t.name)
                if fact is not None and fact.node is not None and fact.node not in out:
                    out.append(fact.node)
        return out

    def _lineage(self, cd: cst.ClassDef) -> List[cst.ClassDef]:
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

    def _is_subclass_or_same(self, cd: cst.ClassDef, base: cst.ClassDef) -> bool:
        return base in self._lineage(cd)

    def class_methods(self, cd: cst.ClassDef, name: str) -> List[cst.FunctionDef]:
        """The method ``name`` resolves to on an instance of cd (first in the lineage)."""
        for klass in self._lineage(cd):
            found = [s for s in klass.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
            found += self._attached()[1].get((id(klass), name), [])
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
        (``self.opt = Adam()``, ``self.model, self.opt = model, Adam()``)."""
        key = (id(cd), attr)
        cache = self.__dict__.setdefault("_attr_cache", {})
        if key in cache:
            return cache[key]
        cache[key] = []
        out: List[cst.BaseExpression] = []
        # a property: what its getter returns (``window.train``)
        for f in self.class_methods(cd, attr):
            if any(isinstance(d.decorator, cst.Name) and d.decorator.value == "property" for d in f.decorators):
                out += _returns(f)
        for klass in self._lineage(cd):
            for assign in self.assigns:
                fdef = self.enclosing_function(assign)
                if fdef is None or self.method_owner(fdef) is not klass:
                    continue
                for target in assign.targets:
                    out += self._self_attr_values(target.target, assign.value, attr, klass)
        cache[key] = out
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
        return []

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
            combined = self._combined_datasets(expr)
            if combined is not None:  # sample_from_datasets([a, b]): the sources of a and b
                return [s for d in combined for s in self.dataset_sources(d, seen)]
            f = expr.func
            if isinstance(f, cst.Attribute) and f.attr.value in apis.DATASET_METHODS:
                return self.dataset_sources(f.value, seen)
            if isinstance(f, cst.Name):
                out: List[cst.Call] = []
                for fdef in self._local_functions(f):
                    for ret in _returns(fdef):
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

    def reads_bound_to(self, name: str, value: cst.CSTNode) -> List[cst.Name]:
        """The reads of ``name`` that its binding to ``value`` reaches (no
        binding's target is a read: ``x = ...``, ``with ... as x``, ``for x in``)."""
        reads = self.scopes.access_index  # the Names the scope walk saw used (loaded)
        return [n for n in walk(self.module) if isinstance(n, cst.Name) and n.value == name
                and n in reads and not isinstance(self.parent(n), (cst.AssignTarget, cst.AnnAssign, cst.AugAssign))
                and any(v is value for _, v in self.assigned_values(n))]

    def _combined_datasets(self, call: cst.Call) -> Optional[List[cst.BaseExpression]]:
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


# Where a return statement can be, below a function body (expressions cannot hold one).
_STATEMENT_CONTAINERS = (cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine, cst.ExceptHandler,
                         cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)
_STATEMENT_PARTS = _STATEMENT_CONTAINERS + (cst.Return,)


def _returns(fdef: cst.FunctionDef) -> List[cst.BaseExpression]:
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


def module_class_facts(module: cst.Module, module_name: str, is_package: bool = False,
                       known: Optional[Mapping[str, ClassFact]] = None) -> Dict[str, ClassFact]:
    """Class facts of one module keyed by absolute qualified name, for project indexes."""
    a = Analysis(module, ProjectContext(module_name, is_package, dict(known or {})))
    out = {}
    for qual, fact in a.classes.items():
        if "<locals>" in qual:
            continue
        out[f"{module_name}.{qual}" if module_name else qual] = fact
    return out
