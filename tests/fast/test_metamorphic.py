"""Metamorphic tests: the same program written another way converts the same way.

Every whole-script fixture (tests/fast/fixtures/*/*/input.py with an
expected output for the engine, and no module of its own beside it) is
varied by tests/fast/metamorphic.py -- an import bound under another name,
a comment before every top-level statement, the script's tail moved into
``main()``, ``x = x + y`` and ``x += y`` swapped, a number a call is given
bound to a temporary first, the script split into notebook cells, a method
chain written one call a statement, a call bound to a name and read once
given in its place, names imported from a module read through the module
-- and converted with each engine whose expected output the
fixture has. The variant must end as the original does (converted,
unchanged, or refused at the mapped line) with the same findings: the
same rule and level at the mapped line, as many times.

Known differences, each asserted to still differ (an entry that stops
differing fails: remove it), are listed in KNOWN with the reason.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tfdist.api import convert_source
from tfdist.project.notebook import convert_notebook

from metamorphic import TRANSFORMS

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ENGINES = {"horovod": "expected.py", "tf-distribute": "expected.tf-distribute.py"}


def _cases():
    out = []
    for path in sorted(FIXTURES.glob("*/*/input.py")):
        own = [p for p in path.parent.glob("*.py") if p.name != "input.py" and not p.name.startswith("expected")]
        if own or any(p.is_dir() for p in path.parent.iterdir()):
            continue  # a project of several modules: its variants would need them too
        engines = [engine for engine, expected in ENGINES.items() if (path.parent / expected).exists()]
        if engines:
            out.append((path, engines))
    return out


CASES = _cases()
#: (fixture dir relative to fixtures/, engine, variant) -> why the conversion differs (asserted)
KNOWN: dict = {
    # the temporary bound between the optimizer and the model is no part of the model's
    # construction: strategy.scope() is opened twice around it (both in scope, two findings)
    ("keras/compile_fit_settings_in_dicts", "tf-distribute", "temporaries"): "scope split by a temporary",
    # a block cannot span notebook cells: each cell that builds a part of the model (the model,
    # its optimizer, compile) opens strategy.scope() of its own (all in scope; a finding per block)
    ("keras/compile_fit_settings_in_dicts", "tf-distribute", "cells"): "a scope per cell",
    ("gradient_tape/optimizer_per_layer_group_pairs", "tf-distribute", "cells"): "a scope per cell",
    # open(), the loop writing to it and close() in three cells: the one `if hvd.rank() == 0:`
    # block that guards them in the script cannot span cells; warned with the edit to make
    ("keras/rank0_open_write_close", "horovod", "cells"): "rank-0 block split by cells: warned",
    ("keras/rank0_open_write_close", "tf-distribute", "cells"): "rank-0 block split by cells: warned",
    # the models built in the arguments of the function that compiles and fits them: the calls are
    # put in strategy.scope() whole (one block, one finding), where the function's compile was
    ("keras/source_tfds_split_list_through_parameter", "tf-distribute", "inlined"): "models built in the call",
}


def _key(path, engine, kind):
    return (str(path.parent.relative_to(FIXTURES)), engine, kind)


def _findings(result, line_map=lambda line: line):
    return Counter((f.rule, f.level, line_map(f.line)) for f in list(result.changes) + list(result.warnings))


def _outcome(result, line_map=lambda line: line):
    return (result.status, None if result.error_line is None else line_map(result.error_line))


def test_the_suite_is_large_and_varies_every_transformation():
    """Every transformation applies to many scripts (counted on every 4th;
    an update of a name by itself is rarer: at least 5 of them)."""
    sample = [p for p, _e in CASES][::4]
    applied = Counter(kind for path in sample for kind, make in TRANSFORMS.items() if make(path.read_text()))
    assert len(CASES) >= 100 and sum(len(e) for _p, e in CASES) >= 200, len(CASES)
    assert set(applied) == set(TRANSFORMS), applied
    assert all(n >= (5 if kind == "augmented" else len(sample) // 5) for kind, n in applied.items()), (applied, len(sample))


@pytest.mark.parametrize("case", CASES, ids=[str(p.parent.relative_to(FIXTURES)) for p, _e in CASES])
def test_variants_convert_as_the_original_does(case):
    path, engines = case
    src = path.read_text()
    variants = {kind: make(src) for kind, make in TRANSFORMS.items()}
    failures = {}
    for engine in engines:
        original = convert_source(src.encode(), str(path), backend=engine)
        for kind, variant in variants.items():
            if variant is None:
                continue  # does not apply to this script without changing its meaning
            if variant.notebook:
                varied = convert_notebook(str(path.with_suffix(".ipynb")), variant.text.encode(), backend=engine).result
            else:
                varied = convert_source(variant.text.encode(), str(path), backend=engine)
            expected = (_outcome(original, variant.line_map), _findings(original, variant.line_map))
            got = (_outcome(varied, variant.fold), _findings(varied, variant.fold))
            known = KNOWN.get(_key(path, engine, kind))
            if known is not None:
                if got == expected:
                    failures[engine, kind] = f"no longer differs ({known}): remove it from KNOWN"
                continue
            if got[0] != expected[0]:
                failures[engine, kind] = {"outcome": got[0], "expected": expected[0], "error": varied.error}
            elif got[1] != expected[1]:
                failures[engine, kind] = {"missing in the variant": sorted(expected[1] - got[1]),
                                          "extra": sorted(got[1] - expected[1])}
    assert not failures, failures
