"""Stand-in for ``tensorflow.examples.tutorials.mnist`` (removed from TF 2.x).

``install()`` puts a meta-path finder first on ``sys.meta_path`` that answers
only for the names in STANDIN_PACKAGES, and only when no other finder (i.e.
TensorFlow itself) provides them; it serves them from ``tree/``.  The data
are synthetic (see dataset.py): 28x28 images whose label is
``label_of(image)``.
"""
import importlib.util
import os
import sys

_TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tree")

#: Module name -> directory (package) under tree/.
STANDIN_PACKAGES = {
    "tensorflow.examples": "examples",
    "tensorflow.examples.tutorials": os.path.join("examples", "tutorials"),
    "tensorflow.examples.tutorials.mnist": os.path.join("examples", "tutorials", "mnist"),
}


class StandInFinder:
    """Finds the stand-in packages when nothing else does."""

    def find_spec(self, fullname, path=None, target=None):
        rel = STANDIN_PACKAGES.get(fullname)
        if rel is None:
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, StandInFinder) or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:  # noqa: BLE001
                spec = None
            if spec is not None:
                return spec          # the real module exists: leave it alone
        directory = os.path.join(_TREE, rel)
        return importlib.util.spec_from_file_location(fullname, os.path.join(directory, "__init__.py"),
                                                      submodule_search_locations=[directory])


def install():
    if not any(isinstance(f, StandInFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, StandInFinder())


from .dataset import label_of  # noqa: E402,F401
