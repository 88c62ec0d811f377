"""tfdist's own scope walk and position pass against LibCST's providers.

The engine used LibCST's ScopeProvider / QualifiedNameProvider /
PositionProvider until they turned out to be half of every conversion; it
now computes the same facts itself. These tests hold it to LibCST's
answers on real code (fixtures, examples, tfdist's own source), and pin the
scoping rules that matter with a table of small cases.
"""
from __future__ import annotations

import glob
import os

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from tfdist.engine import positions
from tfdist.engine.names import dotted
from tfdist.engine.scopes import ModuleScopes, walk

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The fixtures' training scripts (their inputs: the expected outputs are the
# same code with tfdist's edits), the examples, and tfdist's own engine (code
# of another style: classes, closures, comprehensions). Comparing against
# LibCST's providers costs about a second per 5 modules: the rest of
# tfdist's source added 3 minutes to the fast tier and no shape of its own.
CORPUS = sorted(
    glob.glob(os.path.join(ROOT, "tests", "fast", "fixtures", "**", "input.py"), recursive=True)
    + [p for p in glob.glob(os.path.join(ROOT, "tests", "fast", "fixtures", "**", "*.py"), recursive=True)
       if not os.path.basename(p).startswith(("input", "expected"))]  # a project's helper modules
    + glob.glob(os.path.join(ROOT, "examples", "*.py"))
    + glob.glob(os.path.join(ROOT, "src", "tfdist", "engine", "*.py"))
)


def _modules():
    for path in CORPUS:
        with open(path, "rb") as f:
            yield path, cst.parse_module(f.read())


def test_corpus_is_there():
    assert len(CORPUS) > 100


def test_positions_equal_libcst_position_provider():
    compared = 0
    for path, module in _modules():
        spans, code, pieces = positions.compute(module)
        assert code == module.code, path
        for part in (*module.header, *module.body, *module.footer):
            assert pieces.text[part] == module.code_for_node(part), (path, part)
        theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        for node, r in theirs.items():
            assert spans[node] == (r.start.line, r.start.column, r.end.line, r.end.column), (path, node)
            compared += 1
    assert compared > 100_000


def _edited(module: cst.Module, i: int) -> cst.Module:
    """``module`` with every third top-level statement from ``i`` regenerated
    (a deep copy: the same code, a node the position pass never saw) and a
    new statement after the first."""
    body = [stmt.deep_clone() if k % 3 == i else stmt for k, stmt in enumerate(module.body)]
    body[1:1] = [cst.parse_statement("tfdist_added = 1\n")]
    return module.with_changes(body=body)


@pytest.mark.parametrize("source", [b"x = 1\n\n# tail\n", b"x = 1\r\ny = 2\r\n", b"x = 1\ny = 2",
                                    b"#!/usr/bin/env python\n# head\n\nimport os\n", b"", b"\n\n",
                                    b"def f():\n\tif x:\n\t\treturn 1\n"])
def test_pieces_write_what_codegen_writes_on_small_modules(source):
    module = cst.parse_module(source)
    _, _, pieces = positions.compute(module)
    assert pieces.code(module) == module.code
    for i in range(3):
        new = _edited(module, i)
        assert pieces.code(new) == new.code
    empty = module.with_changes(body=[], header=[], footer=[])
    assert pieces.code(empty) == empty.code


def test_pieces_write_what_codegen_writes_on_edited_modules():
    """The conversion writes an edited module's code from the unchanged
    top-level parts' text and generates only the new parts
    (positions.Pieces): on real code that is byte for byte new.code."""
    compared = 0
    for path in CORPUS:
        if os.path.basename(path) != "input.py":  # the fixtures' training scripts
            continue
        with open(path, "rb") as f:
            module = cst.parse_module(f.read())
        _, _, pieces = positions.compute(module)
        new = _edited(module, compared % 3)
        assert pieces.code(new) == new.code, path
        compared += 1
    assert compared > 100


def _unlazy(value):
    return value() if type(value).__name__ == "LazyValue" else value


def _dotted_import_heads(module):
    """Heads of dotted imports (``import a.b``, ``import a.b as c``): tfdist
    resolves the first name of the chain, LibCST only the full chain."""
    out = set()
    for node in walk(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                if isinstance(alias.name, cst.Attribute):
                    out.add(dotted(alias.name).split(".")[0])
    return out


def _star_imported_names(module, scopes):
    # LibCST leaves names from ``from module import *`` unresolved; tfdist
    # resolves those of TensorFlow's and Keras's modules (see STAR_CASES).
    stars = [imp for imp in walk(module) if isinstance(imp, cst.ImportFrom) and isinstance(imp.names, cst.ImportStar)]
    return {node.value for node in walk(module) if isinstance(node, cst.Name)
            for b in scopes.lookup(node) if any(b.node is star for star in stars)} if stars else set()


def _nonlocal_names(module):
    # LibCST leaves uses of nonlocal (and, in a function, global-declared)
    # names unresolved; tfdist resolves them to the binding they declare.
    return {item.name.value for node in walk(module) if isinstance(node, (cst.Nonlocal, cst.Global))
            for item in node.names}


def test_qualified_names_equal_libcst_for_names_and_attribute_chains():
    compared = extra = 0
    for path, module in _modules():
        theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
        ours = ModuleScopes(module)
        excused = _dotted_import_heads(module) | _nonlocal_names(module) | _star_imported_names(module, ours)
        # the module path of ``from keras.layers import Dense`` is no use of a name
        import_paths = {id(n) for imp in walk(module) if isinstance(imp, cst.ImportFrom) and imp.module is not None
                        for n in walk(imp.module)}
        for node, names in theirs.items():
            if not isinstance(node, (cst.Name, cst.Attribute)) or dotted(node) is None:
                continue  # LibCST also names chains through calls (``f().g``); tfdist does not
            if id(node) in import_paths:
                continue
            if isinstance(node, cst.Name) and node not in ours.scope_of:
                continue  # not a use or a target (an import alias, a keyword...)
            expected = {q.name for q in _unlazy(names)}
            got = ours.qualified(node)
            if expected:
                assert got == expected, (path, module.code_for_node(node))
            elif got:
                assert dotted(node).split(".")[0] in excused, (path, module.code_for_node(node), got)
                extra += 1
            compared += 1
    assert compared > 20_000


# (source, the expression whose qualified names are asked: the argument of the last ``use(...)``, expected)
CASES = [
    ("import tensorflow as tf\nuse(tf.keras.Model)", {"tensorflow.keras.Model"}),
    ("from tensorflow import keras\nuse(keras.optimizers.Adam)", {"tensorflow.keras.optimizers.Adam"}),
    ("from tensorflow.keras.optimizers import Adam as A\nuse(A)", {"tensorflow.keras.optimizers.Adam"}),
    ("import tensorflow.compat.v1\nuse(tensorflow.compat.v1.Session)", {"tensorflow.compat.v1.Session"}),
    ("from .nets import Net\nuse(Net)", {".nets.Net"}),
    ("from .. import nets\nuse(nets.Net)", {"..nets.Net"}),
    ("from . import nets\nuse(nets.Net)", {".nets.Net"}),
    ("use(print)", {"builtins.print"}),
    ("use(undefined_name)", set()),
    # a local shadows the import inside the function only
    ("import tensorflow as tf\ndef f():\n    tf = 1\n    use(tf.x)", {"f.<locals>.tf.x"}),
    ("import tensorflow as tf\ndef f():\n    tf = 1\nuse(tf.x)", {"tensorflow.x"}),
    # class bodies are not visible from their methods
    ("import tensorflow as tf\nclass C:\n    tf = 1\n    def m(self):\n        use(tf.x)", {"tensorflow.x"}),
    ("class C:\n    import tensorflow as tf\n    use(tf.x)", {"tensorflow.x"}),
    # global declarations bind in the module
    ("def f():\n    global tf\n    import tensorflow as tf\nuse(tf.x)", {"tensorflow.x"}),
    # a use sees every binding made before it in its own scope (not only the last)...
    ("import numpy as x\nx = 1\nuse(x)", {"numpy", "x"}),
    ("import numpy as x\nuse(x)\nx = 1", {"numpy"}),
    # ...falls back outside when there are only later ones...
    ("import numpy as x\ndef f():\n    use(x)\n    x = 1", {"numpy"}),
    # ...and a nested scope sees them all
    ("import numpy as x\ndef f():\n    use(x)\nx = 1", {"numpy", "x"}),
    # comprehension variables are their own scope; the first iterable is outside
    ("import numpy as i\n[i for i in range(3)]\nuse(i)", {"numpy"}),
    ("import numpy as np\nuse([np.x for i in range(3)][0])", set()),
    # parameters
    ("def f(tf):\n    use(tf.x)", {"f.<locals>.tf.x"}),
    ("import tensorflow as tf\ndef f(a=tf.x):\n    pass\nuse(f)", {"f"}),
    # except ... as, with ... as
    ("try:\n    pass\nexcept E as e:\n    use(e)", {"e"}),
    ("with open('f') as fh:\n    use(fh)", {"fh"}),
    # class and function qualified names follow PEP 3155
    ("def make():\n    class Net:\n        pass\n    use(Net)", {"make.<locals>.Net"}),
    ("class A:\n    class B:\n        pass\n    use(B)", {"A.B"}),
]


IDS = [c[0].replace("\n", "; ")[:60] for c in CASES]


def _last_use(source: str):
    """(module, the argument of its last ``use(...)`` call)."""
    module = cst.parse_module(source + "\n")
    uses = [n for n in walk(module) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "use"]
    return module, uses[-1].args[0].value


@pytest.mark.parametrize("source,expected", CASES, ids=IDS)
def test_scoping_table(source, expected):
    module, arg = _last_use(source)
    assert ModuleScopes(module).qualified(arg) == expected


@pytest.mark.parametrize("source,expected", CASES, ids=IDS)
def test_scoping_table_agrees_with_libcst(source, expected):
    """The table is LibCST's behaviour, not just tfdist's opinion of it."""
    module, arg = _last_use(source)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    assert {q.name for q in _unlazy(theirs.get(arg, ()))} == expected


def test_references_are_the_uses_of_one_binding():
    module = cst.parse_module("h = Hook()\nhooks = [h, other]\nh2 = h\ndef f():\n    return h\n")
    s = ModuleScopes(module)
    target = module.body[0].body[0].targets[0].target
    refs = s.references(target)
    assert len(refs) == 3 and all(r.value == "h" for r in refs)


# Beyond LibCST: a sole ``name = a.b.c`` of an import is followed (the engine asks with follow_aliases=True).
ALIAS_CASES = [
    ("import tensorflow as tf\ntf1 = tf.compat.v1\nuse(tf1.train.AdamOptimizer)", {"tensorflow.compat.v1.train.AdamOptimizer"}),
    ("import tensorflow as tf\nkeras = tf.keras\nuse(keras.Sequential)", {"tensorflow.keras.Sequential"}),
    ("import tensorflow as tf\nAdam = tf.keras.optimizers.Adam\nuse(Adam)", {"tensorflow.keras.optimizers.Adam"}),
    ("import tensorflow as tf\nk = tf.keras\nL = k.layers\nuse(L.Dense)", {"tensorflow.keras.layers.Dense"}),
    ("import tensorflow as tf\ndef main():\n    tf1 = tf.compat.v1\n    use(tf1.Session)", {"tensorflow.compat.v1.Session"}),
    # not an alias: rebound, or of something that is not imported, or not a plain chain
    ("import tensorflow as tf\ntf1 = tf.compat.v1\ntf1 = other\nuse(tf1.Session)", {"tf1.Session"}),
    ("tf1 = make().compat\nuse(tf1.Session)", {"tf1.Session"}),
    ("x = y.z\nuse(x.Session)", {"x.Session"}),
    ("import tensorflow as tf\ntf1, b = tf.compat.v1, 2\nuse(tf1.Session)", {"tf1.Session"}),
]


@pytest.mark.parametrize("source,expected", ALIAS_CASES, ids=[c[0].replace("\n", "; ")[:60] for c in ALIAS_CASES])
def test_aliases_by_assignment_are_followed_when_asked(source, expected):
    module, arg = _last_use(source)
    scopes = ModuleScopes(module)
    assert scopes.qualified(arg, follow_aliases=True) == expected
    # LibCST's answer (the default) stays a local name
    assert all(not q.startswith("tensorflow") for q in scopes.qualified(arg))


# Beyond LibCST: a name no statement binds, from ``from <TensorFlow/Keras module> import *``.
STAR_CASES = [
    # the only star import: an unbound name can come from nowhere else
    ("from tensorflow.keras.preprocessing.image import *\nuse(ImageDataGenerator)",
     {"tensorflow.keras.preprocessing.image.ImageDataGenerator"}),
    ("from keras.layers import *\nuse(Dense)", {"keras.layers.Dense"}),
    # several: only a name a table of tfdist.apis knows in that module; the last star import binding it wins
    ("from tensorflow.keras.layers import *\nfrom tensorflow.keras.optimizers import *\nuse(RMSprop)",
     {"tensorflow.keras.optimizers.RMSprop"}),
    ("from tensorflow.keras.optimizers import *\nfrom tensorflow.keras.layers import *\nuse(RMSprop)",
     {"tensorflow.keras.optimizers.RMSprop"}),
    ("from tensorflow.keras.layers import *\nfrom tensorflow.keras.optimizers import *\nuse(Dense)", set()),
    # a later star import of another package may bind the name itself: unknown
    ("from tensorflow.keras.optimizers import *\nfrom helpers import *\nuse(Adam)", set()),
    ("from helpers import *\nfrom tensorflow.keras.optimizers import *\nuse(Adam)", {"tensorflow.keras.optimizers.Adam"}),
    ("from helpers import *\nuse(Adam)", set()),
    # statements, builtins and private names are not star imports' to bind
    ("from tensorflow.keras.optimizers import *\nAdam = make()\nuse(Adam)", {"Adam"}),
    ("from tensorflow.keras.optimizers import *\nfrom mine import Adam\nuse(Adam)", {"mine.Adam"}),
    ("from tensorflow.keras.layers import *\nuse(print)", {"builtins.print"}),
    ("from tensorflow.keras.layers import *\nuse(_private)", set()),
    # inside functions too, and through attribute chains
    ("from tensorflow.keras.optimizers import *\ndef f():\n    use(Adam)", {"tensorflow.keras.optimizers.Adam"}),
    ("from tensorflow.keras import *\nuse(optimizers.Adam)", {"tensorflow.keras.optimizers.Adam"}),
]


@pytest.mark.parametrize("source,expected", STAR_CASES, ids=[c[0].replace("\n", "; ")[:70] for c in STAR_CASES])
def test_star_imports_of_tensorflow_and_keras_modules(source, expected):
    module, arg = _last_use(source)
    assert ModuleScopes(module).qualified(arg) == expected
