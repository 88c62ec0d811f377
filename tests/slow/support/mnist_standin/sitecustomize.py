"""Put this directory on PYTHONPATH to make
``from tensorflow.examples.tutorials.mnist import input_data`` work on
TensorFlow versions that no longer ship it (2.x): a meta-path finder answers
for exactly ``tensorflow.examples`` / ``.tutorials`` / ``.mnist`` (and only when
TensorFlow itself has no such module) with tfdist's synthetic stand-in.

Python imports ``sitecustomize`` once at start-up, from the first directory on
sys.path that has one; this file then runs the next ``sitecustomize`` further
down sys.path (if any), so it never hides an installation's own one.
"""
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _install():
    if _HERE not in sys.path:
        sys.path.append(_HERE)
    from tfdist_mnist_standin import install

    install()


def _chain():
    """Run the next sitecustomize on sys.path (the one this file shadows)."""
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == _HERE:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


try:
    _install()
except Exception as exc:  # never break interpreter start-up
    sys.stderr.write(f"mnist stand-in: not installed: {exc}\n")
_chain()
