"""The conversion pipeline for one module: analyse, detect, rewrite, check."""
from __future__ import annotations

from typing import List, Optional

import libcst as cst

from .. import apis
from ..backends import get_backend
from ..rules import PATTERN_RULES, CROSS_CUTTING_RULES, SETUP_RULE
from . import findings as F
from . import patterns as P
from .analysis import Analysis, ProjectContext
from .context import LITERAL_PLACEHOLDER, Context, Unsupported
from .names import canonical
from .source import BadInput, SourceFile, load


NO_TRAINING_MESSAGE = "no training loop found (no Keras fit, GradientTape step, or TF1 session training): nothing converted"


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


def analyse(src: SourceFile, project: Optional[ProjectContext] = None):
    a = Analysis(src.module, project)
    evidence: List[F.Evidence] = []
    for rule in PATTERN_RULES.values():
        evidence += rule.detect(a)
    evidence.sort(key=lambda e: e.line)
    return a, evidence


def convert(src: SourceFile, backend: str = "horovod", project: Optional[ProjectContext] = None) -> F.FileResult:
    path = src.path
    a, evidence = analyse(src, project)
    text = a.text  # the module's code, from the position pass
    found = {e.pattern for e in evidence}
    pattern = P.join_all(e.pattern for e in evidence)
    result = F.FileResult(path=path, status=F.UNCHANGED, pattern=pattern, code=text, data=src.data,
                          evidence=evidence, hierarchy=[f.describe() for f in a.classes.values() if f.kinds],
                          types=a.describe_types())
    markers = _distribution_markers(a)
    if markers:
        result.status = F.ALREADY
        result.warnings.append(F.Finding("already-distributed", 1, 1, F.INFO, "; ".join(markers[:3]) + ": left unchanged"))
        return result
    estimator = [c for c in a.calls if any(n.startswith(apis.ESTIMATOR_PREFIX) for n in a.names(c))]
    if estimator:
        return _refuse(result, a.line(estimator[0]), "tf.estimator training is not supported (use Horovod's estimator recipe by hand)")
    implicit = [c for c in a.calls if a.is_name(c, apis.TF1_EAGER_IMPLICIT_GRADIENTS)]
    if implicit:
        return _refuse(result, a.line(implicit[0]),
                       f"TF1 eager training with {a.code(implicit[0].func)}(...) is not supported: Horovod cannot average "
                       "these gradients (compute them with tf.GradientTape and wrap it in hvd.DistributedGradientTape, "
                       "or use optimizer.minimize)")
    if pattern == P.UNKNOWN:
        if not _uses_tensorflow(a):
            result.status = F.UNCHANGED
            return result
        # Single-file mode refuses (exit 2, nothing written); in a tree the
        # worker reports such a file as an unchanged helper module and copies it.
        return _refuse(result, None, NO_TRAINING_MESSAGE)
    if not P.combinable(found):
        lines = "; ".join(e.human() for e in evidence)
        return _refuse(result, evidence[0].line,
                       f"several training patterns in one file ({', '.join(sorted(found))}) that tfdist cannot combine: {lines}")
    clash = LITERAL_PLACEHOLDER.search(text)
    if clash:
        line = text.count("\n", 0, clash.start()) + 1
        return _refuse(result, line, f"the text {clash.group(0)} in this file is also a tfdist template placeholder; rename it to convert")
    ctx = Context(a, get_backend(backend), path)
    ctx.patterns = found
    from ..rules import keras_fit
    ctx.keras_flavor = keras_fit.flavor(a)
    try:
        for name, rule in PATTERN_RULES.items():
            if name in found:
                rule.apply(ctx)
        for rule in CROSS_CUTTING_RULES:
            rule.apply(ctx)
        SETUP_RULE.apply(ctx)
        new_module = ctx.plan.apply(src.module, a._parents)
    except Unsupported as e:
        return _refuse(result, e.line, e.message)
    code = new_module.code
    try:  # safety net: never hand out code that Python would not accept
        compile(code, path, "exec", dont_inherit=True)
    except SyntaxError as e:  # pragma: no cover - a bug in a rule
        return _refuse(result, None, f"internal error: the converted code does not parse ({e}); nothing written")
    result.code = code
    result.data = code.encode(new_module.encoding)  # what Module.bytes does, without generating the code twice
    result.changes = sorted(ctx.changes, key=lambda c: (c.line, c.col))
    result.warnings = sorted(ctx.warnings, key=lambda w: (w.line, w.col))
    result.status = F.CONVERTED if result.data != src.data else F.UNCHANGED
    return result


def _uses_tensorflow(a: Analysis) -> bool:
    return any("tensorflow" in a.code(node) or "keras" in a.code(node) for node in a.imports)


def _refuse(result: F.FileResult, line: Optional[int], message: str) -> F.FileResult:
    result.status = F.UNSUPPORTED
    result.error = message
    result.error_line = line
    result.changes = []
    result.code = None
    result.data = None
    return result


def convert_path(path: str, backend: str = "horovod", project: Optional[ProjectContext] = None,
                 data: Optional[bytes] = None) -> F.FileResult:
    try:
        src = load(path, data)
    except BadInput as e:
        return F.FileResult(path=path, status=F.FAILED, error=e.message, error_line=e.line)
    try:
        return convert(src, backend, project)
    except RecursionError:  # analysis/rewrite of very deeply nested code (parse succeeded)
        return F.FileResult(path=path, status=F.FAILED,
                            error="too deeply nested to convert (Python's recursion limit); nothing written")
    except Exception as e:  # a bug in a rule must not stop a tree or crash the CLI
        return F.FileResult(path=path, status=F.FAILED,
                            error=f"internal error: {type(e).__name__}: {e} (please report); nothing written")
