"""Post-import hooks: the installers run right after the script imports
TensorFlow / Keras / h5py."""
from __future__ import annotations

import sys

from .devices import install_strategy_tracking, split_local_cpu
from .files import install_h5py, make_file_wrapper
from .keras import install_keras_model, install_keras_optimizer
from .keras3 import install_keras3_model, install_keras3_trainer
from .patch import install_patch
from .record import install_server_join_record
from .samples import install_iterator_hook
from .seeds import install_seed_pairing
from .state import STATE, note_error
from .tables import FILE_WRITE_HOOKS, POST_IMPORT_HOOKS
from .tape import install_keras_losses, install_tape_hooks
from .tf1 import install_session_hooks
from .variables import install_variable_tracking


def _install_tensorflow(module, group):
    if STATE.seed is not None:
        try:
            module.random.set_seed(STATE.seed)
            install_seed_pairing(STATE.seed_base)
        except Exception as exc:  # noqa: BLE001
            note_error("seed", exc)
    try:
        split_local_cpu(module)
    except Exception as exc:  # noqa: BLE001 - recorded; verify then sees the replicas missing
        note_error("local_devices", exc)
    install_variable_tracking()
    install_session_hooks()
    install_iterator_hook()
    install_tape_hooks()
    install_strategy_tracking()
    install_server_join_record()
    for mod_name, qualname, spec, kind in FILE_WRITE_HOOKS:
        install_patch(mod_name, qualname, make_file_wrapper(qualname, spec, kind))


_INSTALLERS = {
    "tensorflow": _install_tensorflow,
    "keras_model": install_keras_model,
    "keras_optimizer": install_keras_optimizer,
    "keras_legacy_optimizer": install_keras_optimizer,
    "keras_losses": install_keras_losses,
    "keras3_optimizer": install_keras_optimizer,
    "keras3_model": install_keras3_model,
    "keras3_trainer": install_keras3_trainer,
    "h5py": install_h5py,
}


def run_hook(name, module):
    group = POST_IMPORT_HOOKS.get(name)
    if group is None:
        return
    try:
        _INSTALLERS[group](module, group)
    except Exception as exc:  # noqa: BLE001
        note_error(f"install {name}", exc)


class PostImportFinder:
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
            run_hook(fullname, module)

        try:
            loader.exec_module = exec_module
        except Exception:  # noqa: BLE001
            return spec
        return spec

    # Python < 3.4 API, unused
    def find_module(self, fullname, path=None):  # pragma: no cover
        return None
