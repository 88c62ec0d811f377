"""tfdist.apis is a package of table families re-exported by its __init__:
every table a family module defines is reachable as ``apis.NAME`` (the same
object, so a rule reading ``apis.X`` sees what the family module built), no
name is defined by two families, and the package adds none of its own."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

from tfdist import apis


def _families():
    return [importlib.import_module(f"tfdist.apis.{m.name}") for m in pkgutil.iter_modules(apis.__path__)]


def _defined(module) -> set:
    """The public upper-case names the module's own top-level statements assign."""
    tree = ast.parse(inspect.getsource(module))
    return {t.id for s in tree.body if isinstance(s, ast.Assign) for t in s.targets
            if isinstance(t, ast.Name) and t.id.isupper() and not t.id.startswith("_")}


def test_every_family_table_is_re_exported_by_the_package():
    families = _families()
    assert len(families) >= 10
    missing = [f"{f.__name__}.{k}" for f in families for k in _defined(f) if getattr(apis, k, None) is not getattr(f, k)]
    assert missing == []


def test_no_table_is_defined_by_two_families():
    owners: dict = {}
    for family in _families():
        for name in _defined(family):
            owners.setdefault(name, []).append(family.__name__)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}


def test_the_package_exports_no_table_no_family_defines():
    defined = {k for f in _families() for k in _defined(f)}
    exported = {k for k in vars(apis) if k.isupper() and not k.startswith("_")}
    assert exported - defined == set()
    assert _defined(apis) == set()
    assert {"DATASET_SOURCES", "ALIAS_EXACT", "KERAS_RANK0_CALLBACKS"} <= exported
