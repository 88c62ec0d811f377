"""Wrapping library functions and methods in place, marked as the probe's."""
from __future__ import annotations

import functools
import sys
import types

from .state import note_error
from .tables import API_ALIAS_PREFIX, API_ALIAS_ROOT


def resolve(module_name: str, qualname: str):
    """Return (owner, attr name, current value) or None if missing."""
    mod = sys.modules.get(module_name)
    if mod is None:
        try:
            import importlib
            mod = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001
            return None
    owner = mod
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    if isinstance(owner, type):
        value = owner.__dict__.get(parts[-1])
    else:
        value = getattr(owner, parts[-1], None)
    if value is None:
        return None
    return owner, parts[-1], value


def _install_wrapper(owner, attr: str, orig, make_wrapper):
    """Set ``owner.attr`` to ``make_wrapper(orig)``, marked as the probe's."""
    wrapper = make_wrapper(orig)
    try:
        functools.update_wrapper(wrapper, orig)
    except Exception:  # noqa: BLE001
        pass
    wrapper._tfdist_probe = True
    setattr(owner, attr, wrapper)
    return wrapper


def install_patch(module_name: str, qualname: str, make_wrapper) -> bool:
    try:
        found = resolve(module_name, qualname)
        if found is None:
            return False
        owner, attr, orig = found
        if getattr(orig, "_tfdist_probe", False):
            return True
        wrapper = _install_wrapper(owner, attr, orig, make_wrapper)
        if isinstance(owner, types.ModuleType):
            _replace_api_aliases(orig, wrapper)
        return True
    except Exception as exc:  # noqa: BLE001
        note_error(f"patch {module_name}.{qualname}", exc)
        return False


def _replace_api_aliases(orig, wrapper) -> None:
    replace_aliases(orig, wrapper, lambda name: name == API_ALIAS_ROOT or name.startswith(API_ALIAS_PREFIX))


def replace_aliases(orig, wrapper, module_accepted) -> None:
    """In every imported module whose name ``module_accepted``, every name
    bound to ``orig`` (an API module re-exporting it) is rebound to ``wrapper``."""
    for name, mod in list(sys.modules.items()):
        if mod is None or not module_accepted(name):
            continue
        try:
            namespace = vars(mod)
        except TypeError:
            continue
        for key, value in list(namespace.items()):
            if value is orig:
                try:
                    setattr(mod, key, wrapper)
                except Exception:  # noqa: BLE001
                    pass


def get_arg(spec: str, args, kwargs, result=None):
    if spec == "ret":
        return result
    _, index, name = spec.split(":")
    if name in kwargs:
        return kwargs[name]
    index = int(index)
    if index < len(args):
        return args[index]
    return None


def patch_inherited(owner, attr: str, make_wrapper) -> bool:
    """Wrap ``owner.attr`` even when ``owner`` inherits it (the wrapper is set
    on ``owner`` itself, so only it and its subclasses see it)."""
    try:
        orig = getattr(owner, attr, None)
        if orig is None:
            return False
        if getattr(orig, "_tfdist_probe", False):
            return True
        _install_wrapper(owner, attr, orig, make_wrapper)
        return True
    except Exception as exc:  # noqa: BLE001
        note_error(f"patch {getattr(owner, '__name__', owner)}.{attr}", exc)
        return False
