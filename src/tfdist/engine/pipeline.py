"""The conversion pipeline for one module: analyse, detect, rewrite, check.

A :class:`Pipeline` is *handed* its rules and its backend; the engine
imports neither (``tfdist.assembly`` is the composition root that builds the
pipelines from ``tfdist.rules`` and ``tfdist.backends``).

Rules are objects or modules with, all optional but ``apply``:

``PATTERN``            the training pattern the rule converts (pattern rules)
``detect(a)``          ``[Evidence]`` of that pattern in an analysed module
``prepare(ctx)``       run for every rule, in order, before any rule applies
                       (facts the backend or other rules need, e.g. the
                       Keras flavour)
``apply(ctx)``         run in the order given; a rule with a ``PATTERN`` only
                       when its pattern was detected in the module
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Union

import libcst as cst

from .. import apis
from . import findings as F
from . import patterns as P
from .analysis import Analysis, ProjectContext
from .context import Context, Unsupported, literal_placeholder
from .names import canonical
from .source import BadInput, SourceFile, load


NO_TRAINING_MESSAGE = "no training loop found (no Keras fit, GradientTape step, or TF1 session training): nothing converted"


class Pipeline:
    """One engine's conversion: these rules, in this order, emitting through this backend."""

    def __init__(self, rules: Sequence, backend):
        self.rules = tuple(rules)
        self.backend = backend
        self.pattern_rules = tuple(r for r in self.rules if getattr(r, "PATTERN", None) is not None)
        self._literal = literal_placeholder(backend.placeholder_names())

    # ------------------------------------------------------------ analysis
    def analyse(self, src: SourceFile, project: Optional[ProjectContext] = None):
        a = Analysis(src.module, project)
        evidence: List[F.Evidence] = []
        for rule in self.pattern_rules:
            evidence += rule.detect(a)
        evidence.sort(key=lambda e: e.line)
        return a, evidence

    # ------------------------------------------------------------ conversion
    def convert(self, src: SourceFile, project: Optional[ProjectContext] = None,
                boundaries: Sequence[int] = ()) -> F.FileResult:
        """``boundaries``: lines of module-level statements that separate
        segments of the source run apart (a notebook's cells): no block an
        edit opens (a replication scope, a guard) spans one."""
        path = src.path
        skip = skip_marker(src.data)
        if skip is not None:  # the user's or a generator's word: left exactly as it is
            line, why = skip
            code = src.module.code
            result = F.FileResult(path=path, status=F.UNCHANGED, code=code, data=src.data)
            result.warnings.append(F.Finding("skip-file", line, 1, F.INFO, f"{why}: left unchanged"))
            return result
        a, evidence = self.analyse(src, project)
        text = a.text  # the module's code, from the position pass
        found = {e.pattern for e in evidence}
        pattern = P.join_all(e.pattern for e in evidence)
        result = F.FileResult(path=path, status=F.UNCHANGED, pattern=pattern, code=text, data=src.data,
                              evidence=evidence, hierarchy=[f.describe() for f in a.classes.values() if f.kinds],
                              types=a.describe_types())
        # training there is, but a framework runs it (scikit-learn, Keras Tuner): not "no training loop"
        wrapped = [c for c in a.calls if a.is_name(c, apis.KERAS_SKLEARN_WRAPPERS)]
        tuners = [c for c in a.calls if a.is_name(c, apis.KERAS_TUNERS) or a.is_name(c, apis.AUTOKERAS_SEARCHES)]
        done = self._before_rules(a, result, wrapped, tuners)
        if done is not None:
            return done
        ctx = Context(a, self.backend, path)
        ctx.patterns = found
        if boundaries:
            lines = set(boundaries)
            ctx.plan.barriers.update(s for s in src.module.body if a.line(s) in lines)
        try:
            new_module = self._apply_rules(ctx, a, src, found, wrapped, tuners)
        except Unsupported as e:
            return _refuse(result, e.line, e.message)
        code = a.pieces.code(new_module)  # new_module.code, generating only what the edits changed
        try:  # safety net: never hand out code that Python would not accept
            _accepted_as_the_input_was(code, src.module.code, path)
        except SyntaxError as e:  # pragma: no cover - a bug in a rule
            return _refuse(result, None, f"internal error: the converted code does not parse ({e}); nothing written")
        result.code = code
        result.data = code.encode(new_module.encoding)  # what Module.bytes does, without generating the code twice
        result.full_batch = bool(ctx.facts.get("full_batch"))
        result.tf_keras_on_workers = bool(ctx.facts.get("tf_keras_on_workers"))
        result.tf_keras_everywhere = bool(ctx.facts.get("tf_keras_everywhere"))
        result.changes = sorted(ctx.changes, key=lambda c: (c.line, c.col))
        result.warnings = sorted(ctx.warnings, key=lambda w: (w.line, w.col))
        result.status = F.CONVERTED if result.data != src.data else F.UNCHANGED
        return result

    def _before_rules(self, a: Analysis, result: F.FileResult, wrapped: list, tuners: list) -> Optional[F.FileResult]:
        """The result when the module is not for the rules (already
        distributed, refused, no training, several patterns, a placeholder
        clash); None when the rules convert it."""
        evidence, pattern = result.evidence, result.pattern
        found = {e.pattern for e in evidence}
        markers = _distribution_markers(a)
        if markers:
            result.status = F.ALREADY
            result.warnings.append(F.Finding("already-distributed", 1, 1, F.INFO, "; ".join(markers[:3]) + ": left unchanged"))
            return result
        estimator = [c for c in a.calls if any(n.startswith(apis.ESTIMATOR_PREFIX) for n in a.names(c))]
        if estimator:
            return _refuse(result, a.line(estimator[0]), self.backend.estimator_refusal())
        other_backend = _keras_backend_set(a)
        if other_backend is not None:
            node, name = other_backend
            return _refuse(result, a.line(node), (
                f"Keras runs on its {name} backend here (set on this line): it trains with "
                f"{'PyTorch' if name == 'torch' else name.upper() if name == 'jax' else name}, not TensorFlow, and "
                "tfdist's engines distribute TensorFlow training: nothing converted. Distribute it with that "
                "framework's own tools (keras.distribution for JAX, torch.distributed for PyTorch), or train on "
                "the TensorFlow backend and convert again"))
        implicit = [c for c in a.calls if a.is_name(c, apis.TF1_EAGER_IMPLICIT_GRADIENTS)]
        if implicit:
            return _refuse(result, a.line(implicit[0]), self.backend.implicit_gradients_refusal(a.code(implicit[0].func)))
        if wrapped and pattern == P.UNKNOWN:
            return _refuse(result, a.line(wrapped[0]), (
                f"{a.code(wrapped[0].func)} (line {a.line(wrapped[0])}) trains Keras models inside scikit-learn "
                "(its fit, cross_val_score, GridSearchCV: one model per fold or candidate), where tfdist cannot "
                "divide the data or average the gradients: nothing converted. To distribute it, build the model "
                "and train it with model.fit(...) in the script, and convert that"))
        if tuners and pattern == P.UNKNOWN:
            tuner = tuners[0]
            if a.is_name(tuner, apis.AUTOKERAS_SEARCHES):
                return _refuse(result, a.line(tuner), (
                    f"{a.code(tuner.func)} (line {a.line(tuner)}) trains Keras models inside AutoKeras (one per "
                    "trial, searched with Keras Tuner), where tfdist cannot divide the data or average the "
                    "gradients: nothing converted. To distribute it, train the best model it finds (its "
                    "export_model()) with model.fit(...) in the script, and convert that"))
            return _refuse(result, a.line(tuner), (
                f"{a.code(tuner.func)} (line {a.line(tuner)}) trains Keras models inside Keras Tuner (one "
                "per trial), where tfdist cannot divide the data or average the gradients: nothing converted. To "
                "distribute it, train the model its best hyperparameters build with model.fit(...) in the script, "
                "and convert that"))
        if pattern == P.UNKNOWN:
            if not _uses_tensorflow(a):
                result.status = F.UNCHANGED
                return result
            # Single-file mode refuses (exit 2, nothing written); in a tree the
            # worker reports such a file as an unchanged helper module and copies it.
            library = _library_fit(a)
            if library is None:
                return _refuse(result, None, NO_TRAINING_MESSAGE)
            call, cls, made = library
            return _refuse(result, a.line(call), NO_TRAINING_MESSAGE.replace(": nothing converted", (
                f"; {a.code(call.func)}(...) (line {a.line(call)}) trains an object of {cls} (made on line "
                f"{made}), a class from outside TensorFlow and Keras that tfdist does not know to be a Keras "
                "model (if it trains one, distribute it with that library's own option, or train the Keras "
                "model with model.fit(...) in the script, and convert that): nothing converted")))
        if not P.combinable(found):
            lines = "; ".join(e.human() for e in evidence)
            return _refuse(result, evidence[0].line,
                           f"several training patterns in one file ({', '.join(sorted(found))}) that tfdist cannot combine: {lines}")
        text = result.code
        clash = self._literal.search(text)
        if clash:
            line = text.count("\n", 0, clash.start()) + 1
            return _refuse(result, line, f"the text {clash.group(0)} in this file is also a tfdist template placeholder; rename it to convert")
        return None

    def _apply_rules(self, ctx: Context, a: Analysis, src: SourceFile, found: set, wrapped: list, tuners: list):
        """Every rule's prepare, then the rules whose pattern was found (and
        the rules without one), then the edit plan: the new module.
        Raises Unsupported."""
        for rule in self.rules:
            prepare = getattr(rule, "prepare", None)
            if prepare is not None:
                prepare(ctx)
        for rule in self.rules:
            own = getattr(rule, "PATTERN", None)
            if own is None or own in found:
                rule.apply(ctx)
        for call in wrapped:  # beside training tfdist converts
            said = self.backend.sklearn_wrapper_warning(a.code(call.func), _handed_on(a, call))
            if said is not None:
                ctx.warn(call, "data-division", said)
        for call in tuners:
            ctx.warn(call, "data-division", self.backend.tuner_warning(a.code(call.func)))
        return ctx.plan.apply(src.module, a.scopes.parents)

    def convert_path(self, path: str, project: Optional[ProjectContext] = None,
                     data: Optional[bytes] = None, boundaries: Sequence[int] = ()) -> F.FileResult:
        try:
            src = load(path, data)
        except BadInput as e:
            return F.FileResult(path=path, status=F.FAILED, error=e.message, error_line=e.line)
        try:
            return self.convert(src, project, boundaries)
        except RecursionError:  # analysis/rewrite of very deeply nested code (parse succeeded)
            return F.FileResult(path=path, status=F.FAILED,
                                error="too deeply nested to convert (Python's recursion limit); nothing written")
        except Exception as e:  # a bug in a rule must not stop a tree or crash the CLI
            return F.FileResult(path=path, status=F.FAILED,
                                error=f"internal error: {type(e).__name__}: {e} (please report); nothing written")


# ---------------------------------------------------------------- registry
# Pipelines by their options (any hashable key: tfdist.options.Options),
# built by the factory the composition root (tfdist.assembly) sets, so
# callers holding only options can reach one without the engine knowing
# any rule or backend. Each is built once per process and shared.
_FACTORY: List[Callable[[Hashable], Pipeline]] = []
_BUILT: Dict[Hashable, Pipeline] = {}


def set_factory(factory: Callable[[Hashable], Pipeline]) -> None:
    """How a pipeline is built from its key (replaces any earlier factory)."""
    _FACTORY[:] = [factory]
    _BUILT.clear()


def resolve(pipeline: Union[Hashable, Pipeline]) -> Pipeline:
    """A Pipeline, or the one for this key (built on first use, then shared);
    ValueError when the key is not one the factory can build."""
    if isinstance(pipeline, Pipeline):
        return pipeline
    if pipeline not in _BUILT:
        if not _FACTORY:
            raise ValueError("no pipeline factory: import tfdist.assembly (the composition root) first")
        _BUILT[pipeline] = _FACTORY[0](pipeline)
    return _BUILT[pipeline]


# ---------------------------------------------------------------- helpers
# ``# tfdist: skip-file`` on a line of its own (as ``# ruff: noqa``, ``# fmt:
# off``), and the usual generated-file markers in the first lines
# (``@generated``, Go's ``Code generated ... DO NOT EDIT.``).
_SKIP_FILE = re.compile(rb"^[ \t]*#[ \t]*tfdist:[ \t]*skip-file[ \t]*\r?$", re.M)
_GENERATED = re.compile(rb"^[ \t]*#.*(@generated\b|Code generated .* DO NOT EDIT)", re.M)
GENERATED_HEAD_LINES = 10


def skip_marker(data: bytes) -> Optional[tuple]:
    """(line, why) when the file asks not to be converted, else None."""
    m = _SKIP_FILE.search(data)
    if m:
        return data.count(b"\n", 0, m.start()) + 1, "# tfdist: skip-file"
    head = b"\n".join(data.split(b"\n", GENERATED_HEAD_LINES)[:GENERATED_HEAD_LINES])
    m = _GENERATED.search(head)
    if m:
        return head.count(b"\n", 0, m.start()) + 1, "a generated file (" + m.group(1).decode("ascii", "replace") + ")"
    return None



def _under(name: str, modules) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


# Last parts of the distribution modules' names: an attribute ``x.distribute``
# is resolved (and compared by qualified name) only when its name is one of them.
_DISTRIBUTED_ATTRS = {m.rsplit(".", 1)[1] for m in apis.DISTRIBUTED_TF_MODULES}


def _distribution_markers(a: Analysis) -> List[str]:
    out = []
    for node in a.imports:
        if isinstance(node, cst.Import):
            for alias in node.names:
                if a.code(alias.name).split(".")[0] in apis.DISTRIBUTED_MODULE_ROOTS:
                    out.append(f"line {a.line(node)}: imports {a.code(alias.name)}")
                elif _under(canonical(a.code(alias.name)), apis.DISTRIBUTED_TF_MODULES):
                    out.append(f"line {a.line(node)}: imports {a.code(alias.name)}")
        elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            module = a.code(node.module)
            if module.split(".")[0] in apis.DISTRIBUTED_MODULE_ROOTS:
                out.append(f"line {a.line(node)}: imports from {module}")
                continue
            names = [module]
            if not isinstance(node.names, cst.ImportStar):
                names += [f"{module}.{a.code(alias.name)}" for alias in node.names]
            if any(_under(canonical(n), apis.DISTRIBUTED_TF_MODULES) for n in names):
                out.append(f"line {a.line(node)}: imports from {module}")
    for call in a.calls:
        names = a.names(call)
        if any(n.startswith(apis.TF_DISTRIBUTE_PREFIX) or _under(n, apis.DISTRIBUTED_TF_MODULES)
               or n in apis.DISTRIBUTED_TF_FUNCTIONS for n in names):
            out.append(f"line {a.line(call)}: uses {a.code(call.func)}")
    if not out:  # a distribution API used without a call (a class, an isinstance check...)
        for node in a.scopes.by_type.get(cst.Attribute, ()):
            if node.attr.value in _DISTRIBUTED_ATTRS and any(
                    _under(n, apis.DISTRIBUTED_TF_MODULES) for n in a.names(node)):
                out.append(f"line {a.line(node)}: uses {a.code(node)}")
                break
    return out


def _keras_backend_set(a: Analysis):
    """(node, name) where the script sets Keras 3's backend to one other than
    TensorFlow: ``os.environ["KERAS_BACKEND"] = "torch"``,
    ``os.environ.setdefault("KERAS_BACKEND", "jax")``,
    ``keras.config.set_backend("jax")``; None otherwise."""
    def literal(node):
        return node.evaluated_value if isinstance(node, cst.SimpleString) and isinstance(
            node.evaluated_value, str) else None
    for assign in a.assigns:
        for target in assign.targets:
            t = target.target
            if isinstance(t, cst.Subscript) and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index) \
                    and apis.ENVIRON in a.qualified(t.value) \
                    and literal(t.slice[0].slice.value) == apis.KERAS_BACKEND_VARIABLE:
                name = literal(assign.value)
                if name is not None and name != apis.KERAS_TENSORFLOW_BACKEND:
                    return assign, name
    for call in a.calls:
        args = [arg.value for arg in call.args]
        if a.is_name(call, apis.KERAS_BACKEND_SETTERS) and args:
            name = literal(args[0])
        elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "setdefault" \
                and apis.ENVIRON in a.qualified(call.func.value) and len(args) == 2 \
                and literal(args[0]) == apis.KERAS_BACKEND_VARIABLE:
            name = literal(args[1])
        else:
            continue
        if name is not None and name != apis.KERAS_TENSORFLOW_BACKEND:
            return call, name
    return None


def _library_fit(a: Analysis) -> Optional[tuple]:
    """A call that trains an object an imported class from outside
    TensorFlow and Keras made (``clf = ak.ImageClassifier(...)``, then
    ``clf.fit(...)``): (the call, the class's name, the line that made the
    object); None without one."""
    for call in a.calls:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in apis.TRAINING_METHODS
                and isinstance(func.value, cst.Name)):
            continue
        for stmt, value in a.assigned_values(func.value):
            if not (isinstance(value, cst.Call) and a.is_import_binding(value.func)):
                continue
            names = sorted(a.names(value))
            if names and not any(n.split(".")[0] in apis.FRAMEWORK_ROOTS for n in names):
                return call, names[0], a.line(stmt)
    return None


def _uses_tensorflow(a: Analysis) -> bool:
    return any("tensorflow" in a.code(node) or "keras" in a.code(node) for node in a.imports)


def _accepted_as_the_input_was(code: str, original: str, path: str) -> None:
    """Raise SyntaxError if Python would not accept the converted code.

    Compiled as a whole when the input compiles as a whole. A notebook's
    cells joined into one module may not (a ``from __future__`` import or a
    top-level ``await`` in a later cell is valid in its cell, as IPython runs
    it, but not in one file): then the converted code is held to what the
    input met, the grammar (``ast.parse``)."""
    try:  # the converted code compiles: done, with one compilation
        compile(code, path, "exec", dont_inherit=True)
        return
    except SyntaxError:
        try:
            compile(original, path, "exec", dont_inherit=True)
        except SyntaxError:
            ast.parse(code, path)
            return
        raise


def _handed_on(a: Analysis, call: cst.Call) -> bool:
    """The object ``call`` makes is handed to another call (scikit-learn's
    cross_val_score, GridSearchCV, a Pipeline...), which then trains it
    itself: directly as an argument, or through a name bound to it. Its own
    methods (``clf.fit(X, y)``, ``clf.predict(X)``) hand it nothing."""
    def handed(node) -> bool:
        parent = a.parent(node)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):
            parent = a.parent(parent)  # in a list of estimators
        return isinstance(parent, cst.Arg)
    if handed(call):
        return True
    parent = a.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return any(handed(use) for use in a.scopes.references(parent.targets[0].target))
    return not isinstance(parent, (cst.Attribute, cst.Expr))  # bound otherwise: cannot tell, so handed


def _refuse(result: F.FileResult, line: Optional[int], message: str) -> F.FileResult:
    result.status = F.UNSUPPORTED
    result.error = message
    result.error_line = line
    result.changes = []
    result.code = None
    result.data = None
    return result
