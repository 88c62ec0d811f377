"""Models a method (or function) returns as a tuple, unpacked into the
trainer's attributes: ``(self.classifier, self.discriminator) =
self._create_discriminators()`` (a held-out semi-supervised GAN). The
attributes were not followed to the models: tf-distribute left them and
their compile() outside the scope (both workers stopped: "Variable ... was
not created in the distribution strategy scope"), and a file with no other
model was "no training loop found". Each spelling is one program."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfdist.api import convert_file

SCRIPT = (Path(__file__).resolve().parents[1] / "slow" / "tuple_models" / "pair.py").read_text()
UNPACK = "        (self.classifier,\n         self.scorer) = self._create_models()\n"


def _module_function() -> str:
    """The models made by a function of the module instead of a method."""
    method = SCRIPT[SCRIPT.index("    def _create_models(self):"):SCRIPT.index("    def train(")]
    method_lines = method.replace("_create_models(self)", "create_models()").splitlines()
    function = "\n".join(line[4:] for line in method_lines) + "\n\n"
    src = SCRIPT.replace(method, "").replace(UNPACK, "        self.classifier, self.scorer = create_models()\n")
    return src.replace("class Pair(object):", function + "class Pair(object):")


SPELLINGS = {
    "parenthesised": SCRIPT,
    "one_line": SCRIPT.replace(UNPACK, "        self.classifier, self.scorer = self._create_models()\n"),
    "list_target": SCRIPT.replace(UNPACK, "        [self.classifier, self.scorer] = self._create_models()\n"),
    "returned_name": SCRIPT.replace("        return clf, score\n", "        models = (clf, score)\n        return models\n"),
    "module_function": _module_function(),
}


def _convert(tmp_path, src, backend):
    path = tmp_path / "train.py"
    path.write_text(src)
    return convert_file(path, backend=backend)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_tf_distribute_builds_and_compiles_both_models_in_the_scope(tmp_path, name):
    r = _convert(tmp_path, SPELLINGS[name], "tf-distribute")
    assert r.status == "converted", r.error
    lines = r.code.splitlines()
    for made in ("clf = Model(", "score = Model(", "self.classifier.compile(", "self.scorer.compile("):
        i = next(k for k, line in enumerate(lines) if made in line)
        indent = len(lines[i]) - len(lines[i].lstrip())
        scope = next(k for k in range(i, -1, -1) if lines[k].strip() == "with strategy.scope():"
                     and len(lines[k]) - len(lines[k].lstrip()) < indent)
        assert all(len(lines[k]) - len(lines[k].lstrip()) > len(lines[scope]) - len(lines[scope].lstrip())
                   for k in range(scope + 1, i + 1) if lines[k].strip()), (name, made)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_horovod_wraps_both_optimizers(tmp_path, name):
    r = _convert(tmp_path, SPELLINGS[name], "horovod")
    assert r.status == "converted", r.error
    assert r.code.count("DistributedOptimizer(Adam(1e-3 * hvd.size()))") == 2
