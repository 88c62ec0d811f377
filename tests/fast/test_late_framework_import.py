"""The start-up code reads TensorFlow by the name the script binds it to; when the script binds that
name only further down (``from tensorflow import keras`` at the top, ``import tensorflow as tf``
later -- a held-out book's listing), the name is imported again where the start-up code runs. The
converted script stopped with ``NameError: name 'tf' is not defined`` before (both engines)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tfdist.api import convert_source

SCRIPT = Path(__file__).resolve().parents[1] / "slow" / "late_imports" / "train.py"


def _first_line(tree: ast.Module, test) -> int:
    return min(node.lineno for stmt in tree.body for node in ast.walk(stmt) if test(node))


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("late", ["import tensorflow as tf", "import numpy as np2, tensorflow as tf"])
def test_tf_is_bound_before_the_start_up_code_reads_it(backend, late):
    source = SCRIPT.read_text().replace("import tensorflow as tf\n", late + "\n")
    result = convert_source(source.encode(), "train.py", backend=backend)
    assert result.status == "converted", result.error
    tree = ast.parse(result.data.decode())
    bound = _first_line(tree, lambda n: isinstance(n, ast.alias) and (n.asname or n.name) == "tf")
    read = _first_line(tree, lambda n: isinstance(n, ast.Name) and n.id == "tf" and isinstance(n.ctx, ast.Load))
    assert bound < read, result.data.decode()
    # the script's own late import stays as it was
    assert late in result.data.decode()


def test_a_name_bound_before_the_start_up_code_is_not_imported_twice():
    source = SCRIPT.read_text().replace("import tensorflow as tf\n", "").replace(
        "from tensorflow import keras\n", "import tensorflow as tf\nfrom tensorflow import keras\n")
    result = convert_source(source.encode(), "train.py", backend="tf-distribute")
    lines = result.data.decode().splitlines()
    assert lines.count("import tensorflow as tf") == 1, result.data.decode()
