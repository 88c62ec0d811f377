"""Post-import hooks: the installers run right after the script imports
TensorFlow / Keras / h5py."""
from __future__ import annotations

import sys

from .devices import _install_strategy_tracking, _split_local_cpu
from .files import _install_h5py, _make_file_wrapper
from .keras import _install_keras_model, _install_keras_optimizer
from .keras3 import _install_keras3_model, _install_keras3_trainer
from .patch import _patch
from .samples import _install_iterator_hook
from .state import STATE, _note_error
from .tables import FILE_WRITE_HOOKS, POST_IMPORT_HOOKS
from .tape import _install_keras_losses, _install_tape_hooks
from .tf1 import _install_session_hooks
from .variables import _install_variable_tracking


def _install_tensorflow(module, group):
    if STATE.seed is not None:
        try:
            module.random.set_seed(STATE.seed)
        except Exception as exc:  # noqa: BLE001
            _note_error("seed", exc)
    try:
        _split_local_cpu(module)
    except Exception as exc:  # noqa: BLE001 - recorded; verify then sees the replicas missing
        _note_error("local_devices", exc)
    _install_variable_tracking()
    _install_session_hooks()
    _install_iterator_hook()
    _install_tape_hooks()
    _install_strategy_tracking()
    for mod_name, qualname, spec, kind in FILE_WRITE_HOOKS:
        _patch(mod_name, qualname, _make_file_wrapper(qualname, spec, kind))


_INSTALLERS = {
    "tensorflow": _install_tensorflow,
    "keras_model": _install_keras_model,
    "keras_optimizer": _install_keras_optimizer,
    "keras_legacy_optimizer": _install_keras_optimizer,
    "keras_losses": _install_keras_losses,
    "keras3_optimizer": _install_keras_optimizer,
    "keras3_model": _install_keras3_model,
    "keras3_trainer": _install_keras3_trainer,
    "h5py": _install_h5py,
}


def _run_hook(name, module):
    group = POST_IMPORT_HOOKS.get(name)
    if group is None:
        return
    try:
        _INSTALLERS[group](module, group)
    except Exception as exc:  # noqa: BLE001
        _note_error(f"install {name}", exc)


class _PostImportFinder:
    """Meta-path finder that runs an installer right after selected modules
    finish executing.  It delegates the actual finding to the other finders
    and only wraps the found loader's ``exec_module``."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in POST_IMPORT_HOOKS or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                try:
                    spec = finder.find_spec(fullname, path, target)
                except Exception:  # noqa: BLE001
                    spec = None
                if spec is not None:
                    break
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                del loader.exec_module  # back to the class method
            except Exception:  # noqa: BLE001
                pass
            _run_hook(fullname, module)

        try:
            loader.exec_module = exec_module
        except Exception:  # noqa: BLE001
            return spec
        return spec

    # Python < 3.4 API, unused
    def find_module(self, fullname, path=None):  # pragma: no cover
        return None
