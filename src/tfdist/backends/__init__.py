"""Backends: what distributed-engine code the rules emit.

The rules decide *where* distribution is needed (scale this learning rate,
average these gradients, broadcast these variables, guard this save); a
backend decides *what code* does it. Adding an engine (tf.distribute's
MultiWorkerMirroredStrategy is next) means adding a module here.
"""
from .base import Backend
from .horovod import HorovodBackend
from .parameter_server import ParameterServerBackend
from .tf_distribute import TfDistributeBackend

#: The engines' backends; ``parameter-server`` is tf-distribute with
#: --strategy parameter-server (tfdist.options.Options.engine).
BACKENDS = {"horovod": HorovodBackend, "tf-distribute": TfDistributeBackend, "parameter-server": ParameterServerBackend}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown backend {name!r} (available: {', '.join(sorted(BACKENDS))})") from None
